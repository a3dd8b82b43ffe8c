// A rule the AlertEngine judges on every closed step: it reads the step and
// the job's shared history windows (RuleHistory) and returns one verdict per
// subject it has an opinion on (a rank, a stage, a link, the job). The
// engine turns verdicts into alerts: raise/clear hysteresis, alert ids and
// grouping of effects under their causes are the engine's, not the rule's.
//
// A rule is one file (src/analysis/<name>_rule.cc) holding its class and its
// factory, and one registration (alert_rule_registry.h).
//
// Usage (a rule):
//   class LoaderStallRule : public AlertRule {
//    public:
//     std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
//                                       const RuleHistory& history) override;
//   };
//
// Threading: a rule is not thread-safe; the engine's thread owns it.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_RULE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_RULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/rule_history.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

// One rule's (windowed) test on one subject in one step.
struct RuleVerdict {
  std::string subject;  // unique within the rule, orders the output
  bool holds = false;   // evidence for raising
  // Without the vote: whether the cause is still present (for clearing);
  // may be true while `holds` is not.
  bool present = false;
  std::optional<uint64_t> onset_step;  // the rule's own change point, if any
  v1::Alert alert;                     // rule-specific fields filled (see BaseAlert)
  std::string what;                    // "rank 2 is a straggler"
  std::string values;                  // "compute 41.0 ms vs median 13.2 ms (z=9.1)"
};

class AlertRule {
 public:
  virtual ~AlertRule() = default;

  // Alert.rule of its alerts ("straggler").
  virtual absl::string_view name() const = 0;
  // Its raise/clear counting (its section of RulesConfig).
  virtual const v1::Hysteresis& hysteresis() const = 0;
  // Judges one closed step, after `history` recorded it. Subjects of the
  // rule without a verdict count as not holding.
  virtual std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                            const RuleHistory& history) = 0;
};

// An alert of `rule` with the "none" values of its optional fields set
// (cause_rank, link ranks and stage -1).
v1::Alert BaseAlert(absl::string_view rule);
// Subject keys that sort numerically: "rank 0000000002", "stage 0000000001".
std::string RankSubject(uint32_t rank);
std::string StageSubject(uint32_t stage);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_RULE_H_
