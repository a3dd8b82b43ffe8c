#include "trainscope/collector/pipeline/job_status_builder.h"

#include <utility>

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

JobStatusBuilder::JobStatusBuilder(std::string job_id, int64_t created_unix_ns,
                                   uint64_t name_budget, const AgentStreamTable* streams,
                                   const CommandRunner* commands, const AlertStage* alerts)
    : job_id_(std::move(job_id)),
      created_unix_ns_(created_unix_ns),
      name_budget_(name_budget),
      streams_(streams),
      commands_(commands),
      alerts_(alerts) {}

void JobStatusBuilder::SetRecovery(std::optional<v1::LogRecovery> recovery,
                                   std::map<uint32_t, uint64_t> events_lost_by_rank) {
  recovery_ = std::move(recovery);
  events_lost_by_rank_ = std::move(events_lost_by_rank);
}

v1::JobSummary JobStatusBuilder::Summary(double events_per_second) const {
  v1::JobSummary summary;
  summary.set_job_id(job_id_);
  summary.set_state(streams_->State(commands_->halted()));
  streams_->FillSummary(&summary);
  summary.set_created_unix_ns(created_unix_ns_);
  summary.set_recording(commands_->recording().value_or(streams_->AnyRecording()));
  if (commands_->loss_contribution().has_value()) {
    summary.set_loss_contribution(*commands_->loss_contribution());
  }
  summary.set_events_per_second(events_per_second);
  if (alerts_->enabled()) summary.set_open_alerts(alerts_->open_alerts());
  if (analysis_ != nullptr) summary.set_names_over_budget(analysis_->stats().names_over_budget);
  return summary;
}

void JobStatusBuilder::Publish(double events_per_second, uint64_t feed_sequence,
                               const std::vector<uint32_t>& changed_ranks,
                               JobStatusBoard* board) const {
  v1::JobStatus head;
  *head.mutable_summary() = Summary(events_per_second);
  if (recovery_.has_value()) *head.mutable_recovery() = *recovery_;
  for (const v1::CommandRecord& c : commands_->commands()) *head.add_commands() = c;
  head.set_feed_sequence(feed_sequence);
  *head.mutable_halt_policy() = alerts_->halt_policy();
  std::vector<v1::RankStatus> rows;
  rows.reserve(changed_ranks.size());
  for (uint32_t rank : changed_ranks) {
    v1::RankStatus& row = rows.emplace_back(streams_->ranks().at(rank));  // never removed
    if (auto lost = events_lost_by_rank_.find(rank); lost != events_lost_by_rank_.end()) {
      row.set_events_lost(lost->second);
    }
  }
  board->Publish(std::move(head), std::move(rows));
}

void JobStatusBuilder::AddAnalysisMemory(v1::JobStatus* status) const {
  if (analysis_ == nullptr) return;
  const JobAnalyzerStats stats = analysis_->stats();
  status->mutable_summary()->set_names_over_budget(stats.names_over_budget);
  v1::AnalysisMemory* memory = status->mutable_analysis_memory();
  memory->set_names(stats.names);
  memory->set_name_bytes(stats.name_bytes);
  memory->set_name_budget(name_budget_);
  memory->set_names_over_budget(stats.names_over_budget);
  memory->set_operators_held(stats.operators_held);
  memory->set_operators_evicted(stats.operators_evicted);
  memory->set_released(stats.released);
}

}  // namespace trainscope::collector
