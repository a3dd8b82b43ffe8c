// JobPipeline: alert rules and the halt policy (see job_pipeline.h). The
// rules run on the pipeline thread because it owns what they change: the
// feed sequence, the index and the halt command.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "pipeline_clock.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/collector/pipeline/job_pipeline.h"
#include "trainscope/collector/store/alert_selection.h"

namespace trainscope::collector {
void JobPipeline::StartAlerts() {
  if (!options_.analysis) return;
  alerts_ = std::make_unique<AlertEngine>(job_id_, options_.rules);
  // A policy recovered from the job's own commands wins over the flags.
  if (!halt_policy_from_job_ && options_.halt_policy.enabled()) {
    if (absl::Status applied = ApplyHaltPolicy(options_.halt_policy, "the collector's flags");
        !applied.ok()) {
      Notice(absl::StrCat("trainscope-collector: job ", job_id_, ": ", applied.message()));
    }
  } else if (halt_policy_.enabled()) {
    (void)ApplyHaltPolicy(halt_policy_, "the job's log");
  }
}

absl::Status JobPipeline::ApplyHaltPolicy(const v1::HaltPolicy& policy, absl::string_view source) {
  if (!policy.enabled()) {
    halt_policy_ = policy;
    halt_tracker_.reset();
    return absl::OkStatus();
  }
  if (!alerts_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id_,
        ": a halt policy needs the analysis (the collector runs with --analysis=false)"));
  }
  absl::StatusOr<HaltPolicyTracker> tracker = HaltPolicyTracker::Create(policy);
  if (!tracker.ok()) return tracker.status();
  halt_policy_ = policy;
  halt_tracker_.emplace(std::move(*tracker));
  Notice(absl::StrCat("trainscope-collector: job ", job_id_, ": ", DescribeHaltPolicy(policy),
                      " (from ", source, ")"));
  return absl::OkStatus();
}

void JobPipeline::EvaluateAlerts(const v1::StepReport& step) {
  if (!alerts_) return;
  std::vector<v1::Alert> changes = alerts_->OnStep(step, NowUnixNs());
  std::optional<HaltDecision> decision;
  if (halt_tracker_ && !halted_) {
    decision = halt_tracker_->OnStep(step.step(), alerts_->HoldingRules(), StepEfficiency(step));
  }
  PublishAlerts(std::move(changes));
  if (decision) {
    // The alert that held (raised up to K steps ago) now says it halted the
    // job: updated in place, its index row replaced, sent on the feed again.
    for (auto it = alert_log_.rbegin(); it != alert_log_.rend(); ++it) {
      if (it->rule() != decision->rule) continue;
      if (it->state() == v1::ALERT_STATE_RAISED) {
        it->set_halted_job(true);
        if (index_) pending_index_alerts_.push_back(*it);
        v1::FeedUpdate update;
        *update.mutable_alert() = *it;
        QueueFeed(std::move(update));
      }
      break;
    }
    HaltByPolicy(*decision);
  }
}

void JobPipeline::EvaluateLossEpoch(const LossTracker::ClosedEpoch& epoch) {
  if (!alerts_) return;
  uint64_t step = 0;
  for (const auto& [rank, highest] : max_step_by_rank_) step = std::max(step, highest);
  PublishAlerts(alerts_->OnLossEpoch(epoch, step, NowUnixNs()));
}

void JobPipeline::PublishAlerts(std::vector<v1::Alert> alerts) {
  for (v1::Alert& alert : alerts) {
    if (index_) pending_index_alerts_.push_back(alert);
    alert_log_.push_back(alert);
    while (alert_log_.size() > options_.max_alerts_kept) alert_log_.pop_front();
    v1::FeedUpdate update;
    *update.mutable_alert() = std::move(alert);
    QueueFeed(std::move(update));
  }
  if (!alerts.empty()) summary_changed_ = true;
}

void JobPipeline::OnRankLost(uint32_t rank) {
  if (!alerts_) return;
  // Not at once: at the end of a job every rank's stream closes within a
  // moment, and one that could not say goodbye has not failed its peers.
  PendingLoss& pending = pending_losses_[rank];
  pending.last_step = LastStepOf(rank);
  pending.lost_unix_ns = NowUnixNs();
  pending.peers_connected = !connection_by_rank_.empty();
}

void JobPipeline::OnRankBack(uint32_t rank) {
  pending_losses_.erase(rank);
  if (alerts_) PublishAlerts(alerts_->OnDeviceBack(rank, LastStepOf(rank), NowUnixNs()));
}

void JobPipeline::JudgePendingLosses(int64_t now_unix_ns) {
  if (pending_losses_.empty()) return;
  if (!alerts_ || halted_) {
    pending_losses_.clear();  // a halt's ranks stop on purpose
    return;
  }
  const int64_t grace_ns = absl::ToInt64Nanoseconds(options_.lost_device_grace);
  const bool anyone_connected = !connection_by_rank_.empty();
  // When every rank is gone without a goodbye near it, the first to go is
  // the cause (its peers failed in a collective or were killed by the
  // launcher). Ranks that went within lost_device_together of the first
  // are named with it: a peer that aborts in the broken collective goes a
  // millisecond later, and neither the order the closes reach this thread
  // in nor the last steps they had flushed can tell them apart.
  int64_t first_lost = INT64_MAX;
  for (const auto& [rank, pending] : pending_losses_) {
    if (pending.peers_connected) first_lost = std::min(first_lost, pending.lost_unix_ns);
  }
  const int64_t together_ns = absl::ToInt64Nanoseconds(options_.lost_device_together);
  for (auto it = pending_losses_.begin(); it != pending_losses_.end();) {
    const uint32_t rank = it->first;
    const PendingLoss& pending = it->second;
    bool ending = false;     // a peer said goodbye around the loss: the job is ending
    bool overtaken = false;  // a peer reported steps well past the rank's last
    for (const auto& [peer, r] : ranks_) {
      if (peer == rank) continue;
      if (r.said_goodbye() && r.exit_error().empty() && !r.connected() &&
          std::abs(r.last_seen_unix_ns() - pending.lost_unix_ns) <= grace_ns) {
        ending = true;
      }
    }
    for (const auto& [peer, step] : max_step_by_rank_) {
      if (peer != rank && step >= pending.last_step + options_.lost_device_grace_steps) {
        overtaken = true;
      }
    }
    bool raise = false;
    bool forget = ending;
    if (!ending) {
      if (overtaken || (anyone_connected && now_unix_ns - pending.lost_unix_ns >= grace_ns)) {
        raise = true;
      } else if (!anyone_connected) {
        raise = pending.peers_connected && pending.lost_unix_ns - first_lost <= together_ns;
        forget = true;
      }
    }
    if (raise) {
      PublishAlerts(alerts_->OnDeviceLost(rank, pending.last_step, now_unix_ns));
      forget = true;
    }
    it = forget ? pending_losses_.erase(it) : std::next(it);
  }
}

uint64_t JobPipeline::LastStepOf(uint32_t rank) const {
  auto it = max_step_by_rank_.find(rank);
  return it == max_step_by_rank_.end() ? 0 : it->second;
}

void JobPipeline::HaltByPolicy(const HaltDecision& decision) {
  JobCommand command;
  command.kind = JobCommand::Kind::kHalt;
  command.reason = decision.reason;
  command.requested_by = "halt policy";
  Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                      ": halting by policy: ", decision.reason));
  std::function<void(absl::StatusOr<v1::CommandReply>)> done =
      [this](absl::StatusOr<v1::CommandReply> reply) {
        if (!reply.ok()) {
          Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                              ": the policy's halt failed: ", reply.status().message()));
        }
      };
  ExecuteCommand(command, done);
}

void JobPipeline::Alerts(v1::AlertQuery query, std::function<void(std::vector<v1::Alert>)> done) {
  Post([this, query = std::move(query), done = std::move(done)](bool run) mutable {
    if (!run) return done({});
    done(SelectAlerts(alert_log_, query));
  });
}

}  // namespace trainscope::collector
