#include "trainscope/collector/pipeline/alert_stage.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/collector/store/alert_selection.h"

namespace trainscope::collector {

AlertStage::AlertStage(std::string job_id, Options options)
    : job_id_(std::move(job_id)), options_(std::move(options)) {
  if (options_.enabled) engine_ = std::make_unique<AlertEngine>(job_id_, options_.rules);
}

void AlertStage::Notice(absl::string_view line) const {
  if (options_.notice) options_.notice(line);
}

void AlertStage::Start(const std::optional<v1::HaltPolicy>& recovered,
                       const v1::HaltPolicy& flags) {
  if (recovered.has_value()) {
    policy_ = *recovered;
    policy_from_job_ = true;
  }
  if (!engine_) return;
  if (!policy_from_job_ && flags.enabled()) {
    if (absl::Status applied = ApplyHaltPolicy(flags, "the collector's flags"); !applied.ok()) {
      Notice(absl::StrCat("trainscope-collector: job ", job_id_, ": ", applied.message()));
    }
  } else if (policy_.enabled()) {
    (void)ApplyHaltPolicy(policy_, "the job's log");
  }
}

absl::Status AlertStage::ApplyHaltPolicy(const v1::HaltPolicy& policy, absl::string_view source) {
  if (!policy.enabled()) {
    policy_ = policy;
    tracker_.reset();
    return absl::OkStatus();
  }
  if (!engine_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id_,
        ": a halt policy needs the analysis (the collector runs with --analysis=false)"));
  }
  absl::StatusOr<HaltPolicyTracker> tracker = HaltPolicyTracker::Create(policy);
  if (!tracker.ok()) return tracker.status();
  policy_ = policy;
  tracker_.emplace(std::move(*tracker));
  Notice(absl::StrCat("trainscope-collector: job ", job_id_, ": ", DescribeHaltPolicy(policy),
                      " (from ", source, ")"));
  return absl::OkStatus();
}

AlertStage::StepOutcome AlertStage::OnStep(const v1::StepReport& step, int64_t now_unix_ns,
                                           bool halted) {
  StepOutcome out;
  if (!engine_) return out;
  std::vector<v1::Alert> changes = engine_->OnStep(step, now_unix_ns);
  if (tracker_ && !halted) {
    out.halt = tracker_->OnStep(step.step(), engine_->HoldingRules(), StepEfficiency(step));
  }
  out.alerts = Record(std::move(changes));
  if (out.halt) {
    // The alert that held (raised up to K steps ago) now says it halted the
    // job: updated in place and published again.
    for (auto it = alert_log_.rbegin(); it != alert_log_.rend(); ++it) {
      if (it->rule() != out.halt->rule) continue;
      if (it->state() == v1::ALERT_STATE_RAISED) {
        it->set_halted_job(true);
        out.alerts.push_back(*it);
      }
      break;
    }
  }
  return out;
}

std::vector<v1::Alert> AlertStage::OnLossEpoch(const LossTracker::ClosedEpoch& epoch,
                                               uint64_t step, int64_t now_unix_ns) {
  if (!engine_) return {};
  return Record(engine_->OnLossEpoch(epoch, step, now_unix_ns));
}

std::vector<v1::Alert> AlertStage::OnDeviceLost(uint32_t rank, uint64_t last_step,
                                                int64_t now_unix_ns) {
  if (!engine_) return {};
  return Record(engine_->OnDeviceLost(rank, last_step, now_unix_ns));
}

std::vector<v1::Alert> AlertStage::OnDeviceBack(uint32_t rank, uint64_t last_step,
                                                int64_t now_unix_ns) {
  if (!engine_) return {};
  return Record(engine_->OnDeviceBack(rank, last_step, now_unix_ns));
}

std::vector<v1::Alert> AlertStage::Record(std::vector<v1::Alert> alerts) {
  for (const v1::Alert& alert : alerts) {
    alert_log_.push_back(alert);
    while (alert_log_.size() > options_.max_alerts_kept) alert_log_.pop_front();
  }
  return alerts;
}

std::vector<v1::Alert> AlertStage::Select(const v1::AlertQuery& query) const {
  return SelectAlerts(alert_log_, query);
}

uint32_t AlertStage::open_alerts() const {
  return engine_ ? static_cast<uint32_t>(engine_->OpenAlerts().size()) : 0;
}

}  // namespace trainscope::collector
