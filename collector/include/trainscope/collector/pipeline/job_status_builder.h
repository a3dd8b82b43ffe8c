// What a job's summary (listings, the feed) and full status (trainscope
// status, snapshots) say, put together from the collaborators that own each
// part: the ranks and their streams (AgentStreamTable), the commands and the
// state they set (CommandRunner), the alerts and the halt policy
// (AlertStage), the analysis' memory (AnalysisWorker), and what reopening
// the job's log found (recovery, events lost per rank).
//
// Usage (the pipeline thread):
//   JobStatusBuilder status(job_id, created_unix_ns, name_budget, &streams, &commands, &alerts);
//   status.SetRecovery(recovery, events_lost_by_rank);  // a recovered job
//   status.SetAnalysis(analysis.get());                 // when the analysis is on
//   v1::JobSummary summary = status.Summary(events_per_second);
//   status.Publish(events_per_second, feed_sequence, streams.TakeRanksToRepublish(), &board);
// and on any thread, for a status read from the board:
//   v1::JobStatus full = board.Read();
//   status.AddAnalysisMemory(&full);
//
// Threading: owned by the job's pipeline thread, like the collaborators it
// reads; only AddAnalysisMemory may be called from any thread (it reads the
// analysis' thread-safe stats and what was set before the thread started).
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STATUS_BUILDER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STATUS_BUILDER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/collector/pipeline/agent_stream_table.h"
#include "trainscope/collector/pipeline/alert_stage.h"
#include "trainscope/collector/pipeline/analysis_worker.h"
#include "trainscope/collector/pipeline/command_runner.h"
#include "trainscope/collector/pipeline/job_status_board.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

class JobStatusBuilder {
 public:
  // The pointers must outlive the builder. `name_budget`: the analysis'
  // name budget (AnalysisMemory.name_budget).
  JobStatusBuilder(std::string job_id, int64_t created_unix_ns, uint64_t name_budget,
                   const AgentStreamTable* streams, const CommandRunner* commands,
                   const AlertStage* alerts);

  // What reopening the job's log found; shown in every status.
  void SetRecovery(std::optional<trainscope::v1::LogRecovery> recovery,
                   std::map<uint32_t, uint64_t> events_lost_by_rank);
  // The job's analysis (null: off); must outlive the builder.
  void SetAnalysis(const AnalysisWorker* analysis) { analysis_ = analysis; }

  int64_t created_unix_ns() const { return created_unix_ns_; }

  trainscope::v1::JobSummary Summary(double events_per_second) const;
  // Publishes the job's status to `board`: the summary, the commands, the
  // halt policy, the recovery and `feed_sequence` (the last update
  // published), with the rows of `changed_ranks` (their events lost applied).
  void Publish(double events_per_second, uint64_t feed_sequence,
               const std::vector<uint32_t>& changed_ranks, JobStatusBoard* board) const;
  // Adds to a status read from the board what the analysis thread changes,
  // read now: the analysis' memory and the summary's names over budget (one
  // reading for both). Nothing without an analysis. Thread-safe.
  void AddAnalysisMemory(trainscope::v1::JobStatus* status) const;

 private:
  const std::string job_id_;
  const int64_t created_unix_ns_;
  const uint64_t name_budget_;
  const AgentStreamTable* const streams_;
  const CommandRunner* const commands_;
  const AlertStage* const alerts_;
  const AnalysisWorker* analysis_ = nullptr;
  std::optional<trainscope::v1::LogRecovery> recovery_;  // unset for a new job
  std::map<uint32_t, uint64_t> events_lost_by_rank_;     // since the job began
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STATUS_BUILDER_H_
