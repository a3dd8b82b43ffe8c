#include "trainscope/collector/store/job_state_rule.h"

#include <map>

namespace trainscope::collector {

trainscope::v1::JobState DecideJobState(const JobStateFacts& facts) {
  if (facts.halted) return trainscope::v1::JOB_STATE_HALTED;
  if (facts.connected > 0) return trainscope::v1::JOB_STATE_RUNNING;
  if (facts.ranks_seen > 0 && facts.goodbyes == facts.ranks_seen && facts.vanished == 0) {
    return trainscope::v1::JOB_STATE_FINISHED;
  }
  if (facts.vanished > 0) return trainscope::v1::JOB_STATE_LOST;
  return trainscope::v1::JOB_STATE_IDLE;
}

bool StreamEndedAbnormally(const StreamProgress& progress) {
  return progress.closed && (!progress.goodbye || !progress.exit_error.empty());
}

trainscope::v1::JobState StoredJobState(const JobLogState& state) {
  // Each rank's latest incarnation decides for it, as AgentStreamTable::Recover.
  std::map<uint32_t, const StreamProgress*> latest;
  for (const auto& [key, progress] : state.streams) {
    const StreamProgress*& newest = latest[key.rank];
    if (newest == nullptr || progress.hello.restart_count() >= newest->hello.restart_count()) {
      newest = &progress;
    }
  }
  JobStateFacts facts;
  facts.ranks_seen = static_cast<uint32_t>(latest.size());
  for (const auto& [rank, progress] : latest) {
    if (progress->goodbye) ++facts.goodbyes;
    if (StreamEndedAbnormally(*progress)) ++facts.vanished;
  }
  for (const trainscope::v1::CommandRecord& command : state.commands) {
    if (command.command() == "halt") facts.halted = true;
  }
  return DecideJobState(facts);
}

}  // namespace trainscope::collector
