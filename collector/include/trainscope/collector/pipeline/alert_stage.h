// A job's alerts: the rule engine over closed steps, loss epochs and lost or
// returning ranks; the alerts raised and cleared so far (for queries); and
// the halt policy in force, which decides when a holding rule halts the job.
//
// Usage (on the pipeline thread):
//   AlertStage stage(job_id, {.enabled = analysis, .rules = rules, ...});
//   stage.Start(recovered_policy, flags_policy);
//   AlertStage::StepOutcome out = stage.OnStep(step, now, halted);
//   publish out.alerts (feed, index); if (out.halt) halt the job
//   publish stage.OnDeviceLost(rank, last_step, now);
//
// Every alert a method returns is already in the stage's log; the caller
// puts it on the feed and in the index. When a halt decision is made, the
// alert that held is updated in place (halted_job) and returned again.
// Disabled (no analysis), the methods return nothing and a halt policy is
// refused.
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_ALERT_STAGE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_ALERT_STAGE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/alert_engine.h"
#include "trainscope/collector/analysis/halt_policy_tracker.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class AlertStage {
 public:
  struct Options {
    bool enabled = true;  // false: the collector runs without analysis
    trainscope::v1::RulesConfig rules;
    uint64_t max_alerts_kept = 100'000;  // raise/clear rows kept for queries
    std::function<void(absl::string_view)> notice;  // one-line notices; null: none
  };
  struct StepOutcome {
    std::vector<trainscope::v1::Alert> alerts;  // to publish, in order
    std::optional<HaltDecision> halt;           // the policy says: halt now
  };

  AlertStage(std::string job_id, Options options);

  // Puts a policy in force: one the job set (a logged command, recovered)
  // wins over the collector's flags.
  void Start(const std::optional<trainscope::v1::HaltPolicy>& recovered,
             const trainscope::v1::HaltPolicy& flags);
  // Replaces the policy in force (disabled: none); `source` says where it
  // came from, for the notice. INVALID_ARGUMENT for a bad policy,
  // FAILED_PRECONDITION without analysis.
  absl::Status ApplyHaltPolicy(const trainscope::v1::HaltPolicy& policy,
                               absl::string_view source);
  // The job set its own policy: the flags no longer apply.
  void MarkPolicyFromJob() { policy_from_job_ = true; }
  bool policy_from_job() const { return policy_from_job_; }
  const trainscope::v1::HaltPolicy& halt_policy() const { return policy_; }

  // A closed step; `halted`: the job is halted already (no second decision).
  StepOutcome OnStep(const trainscope::v1::StepReport& step, int64_t now_unix_ns, bool halted);
  std::vector<trainscope::v1::Alert> OnLossEpoch(const LossTracker::ClosedEpoch& epoch,
                                                 uint64_t step, int64_t now_unix_ns);
  std::vector<trainscope::v1::Alert> OnDeviceLost(uint32_t rank, uint64_t last_step,
                                                  int64_t now_unix_ns);
  std::vector<trainscope::v1::Alert> OnDeviceBack(uint32_t rank, uint64_t last_step,
                                                  int64_t now_unix_ns);

  bool enabled() const { return engine_ != nullptr; }
  // Raises and clears matching `query`, oldest first.
  std::vector<trainscope::v1::Alert> Select(const trainscope::v1::AlertQuery& query) const;
  uint32_t open_alerts() const;

 private:
  std::vector<trainscope::v1::Alert> Record(std::vector<trainscope::v1::Alert> alerts);
  void Notice(absl::string_view line) const;

  const std::string job_id_;
  const Options options_;
  std::unique_ptr<AlertEngine> engine_;          // null when disabled
  std::deque<trainscope::v1::Alert> alert_log_;  // raises and clears, oldest first
  trainscope::v1::HaltPolicy policy_;            // in force; enabled false: none
  bool policy_from_job_ = false;
  std::optional<HaltPolicyTracker> tracker_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_ALERT_STAGE_H_
