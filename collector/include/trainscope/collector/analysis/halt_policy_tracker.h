// Decides when the collector halts a job by itself (`--halt-when RULE[,...]
// --for K`, `--halt-below-efficiency X --for K`): a listed rule holds, or the
// step efficiency stays below X, for K consecutive steps. Decides once.
//
// Usage:
//   absl::StatusOr<HaltPolicyTracker> tracker = HaltPolicyTracker::Create(policy);
//   per closed step, after AlertEngine::OnStep:
//     if (auto d = tracker->OnStep(report.step(), engine.HoldingRules(),
//                                  StepEfficiency(report))) {
//       SendHaltToEveryRank(d->reason);   // and record d as the cause
//     }
//
// Threading: not thread-safe; one thread owns it (in the collector, the
// job's pipeline thread, which also owns the feed, the index and the halt).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_HALT_POLICY_TRACKER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_HALT_POLICY_TRACKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

// Why the policy halts the job.
struct HaltDecision {
  std::string rule;         // the rule that held, or "efficiency"
  uint64_t first_step = 0;  // first of the K consecutive steps
  uint64_t step = 0;        // the K-th, where the decision was made
  std::string reason;       // "straggler held for 5 consecutive steps (steps 40-44)"
};

// Useful compute over step time on the step's complete devices:
// sum(compute_ns) / sum(step_time_ns); -1 when no complete device has a step
// time (the tracker then counts the step as not below).
double StepEfficiency(const v1::StepReport& step);

class HaltPolicyTracker {
 public:
  // INVALID_ARGUMENT for an unknown rule name (listing the known ones),
  // for_steps < 1, or below_efficiency outside (0, 1) when set.
  // `extra_rule_names` admits external rules (e.g. loss-contribution ones).
  static absl::StatusOr<HaltPolicyTracker> Create(
      v1::HaltPolicy policy, const std::vector<std::string>& extra_rule_names = {});

  // One closed step (steps in increasing order; a gap in step numbers breaks
  // every run). Returns the decision at the K-th consecutive holding step,
  // once; nullopt otherwise and ever after. A disabled policy never decides.
  std::optional<HaltDecision> OnStep(uint64_t step, const std::vector<std::string>& holding_rules,
                                     double efficiency);

  bool decided() const { return decided_; }
  const v1::HaltPolicy& policy() const { return policy_; }

 private:
  struct Run {
    uint32_t length = 0;
    uint64_t first_step = 0;
  };
  explicit HaltPolicyTracker(v1::HaltPolicy policy);

  v1::HaltPolicy policy_;
  std::vector<Run> rule_runs_;  // parallel to policy_.halt_when()
  Run efficiency_run_;
  double last_efficiency_ = 0;
  std::optional<uint64_t> last_step_;
  bool decided_ = false;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_HALT_POLICY_TRACKER_H_
