// One job's pipeline: the single thread that owns everything mutable about
// the job — its durable log, its index rows, its rank and job status, its
// command history and its live-feed sequence.
//
// Usage:
//   RecoveryReport report;
//   auto pipeline = JobPipeline::Open("job-1", options, &report);
//   pipeline->Attach({hello, stream, peer}, [](absl::StatusOr<AttachResult> r) {...});
//   pipeline->AppendBatch(connection, std::move(batch), bytes, [](absl::Status durable) {...});
//   pipeline->RunCommand(halt, [](absl::StatusOr<v1::CommandReply> reply) {...});
//   pipeline->Stop();
//
// Every call posts a task to the pipeline thread and returns at once. The
// thread runs tasks in order and commits them as a group (GroupCommit): it
// appends everything queued, syncs the log once, publishes the resulting
// feed updates and the job's status, and only then runs the completions
// (hello acks, commands sent to the ranks) and, once the status they changed
// is published, the replies (acks, command replies, snapshots), in the order
// their tasks were posted. So an acknowledged batch is durable, acks of one
// stream stay in order, and a status' feed_sequence names exactly the
// updates its state includes. When a sync fails nothing is acknowledged:
// completions get UNAVAILABLE and the agents resend after reconnecting.
// Status() reads the published status (JobStatusBoard) on the caller's
// thread without waiting for the queue, and still includes every batch
// acked, stream acknowledged and command replied to.
//
// A halt goes to every connected rank with halt_at_step = (highest step
// number in any rank's STEP_MARK events) + halt_step_margin, 0 when no step
// was seen; a rank that connects after the halt gets the same HaltRequest
// right after its HelloAck.
//
// A job's state (JobSummary.state): running while a rank is connected;
// finished once every rank said goodbye; lost when none is connected and one
// ended without goodbye (its stream closed, or the process vanished); idle
// otherwise (no rank yet, or a recovered job whose streams were still open
// when the collector stopped: its ranks may reconnect). Halted wins.
//
// The pipeline also sends clock probes to every connected stream each
// probe_interval and publishes rank counters at most once per
// rank_update_interval (coalesced) so the feed cannot flood.
//
// What the job's durable state was when it started (its log, the index,
// the audit of the two, its token) is JobStorage's to open. What the
// pipeline thread owns is held by collaborators with one job each:
// the agent streams and ranks (AgentStreamTable), who may join and what a
// joining stream is told (AttachHandshake), the job's token
// (JobTokenKeeper), commands and the state they set (CommandRunner), alerts
// and the halt policy (AlertStage), judging lost ranks (RankLossJudge, over
// RankStepProgress), the index rows (JobIndexWriter), when the feed gets rank
// and summary updates and the streams get probes (FeedFlushSchedule), the
// job's event rate (EventRateMeter) and when a finished job's analysis lets
// go of its operators (FinishedJobRelease), what its summary and status
// say (JobStatusBuilder) and where readers find them (JobStatusBoard), and
// which feed updates the analysis' outputs become, in which order
// (AnalysisFeed); its thread and task queue are a TaskRoundThread, the
// order in which a round's work becomes durable, visible and replied to a
// GroupCommit. The pipeline itself routes each call to the collaborators it
// concerns.
//
// Threading: all public methods are thread-safe. Their callbacks run on the
// pipeline thread and must not block. After Stop, calls complete at once
// with UNAVAILABLE; Status() and summary() still read the last status.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_PIPELINE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_PIPELINE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/analysis/halt_policy_tracker.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/bad_input_counters.h"
#include "trainscope/collector/ingest/agent_stream.h"
#include "trainscope/collector/pipeline/agent_stream_table.h"
#include "trainscope/collector/pipeline/alert_stage.h"
#include "trainscope/collector/pipeline/analysis_feed.h"
#include "trainscope/collector/pipeline/analysis_worker.h"
#include "trainscope/collector/pipeline/attach_handshake.h"
#include "trainscope/collector/pipeline/command_runner.h"
#include "trainscope/collector/pipeline/event_rate_meter.h"
#include "trainscope/collector/pipeline/feed_flush_schedule.h"
#include "trainscope/collector/pipeline/finished_job_release.h"
#include "trainscope/collector/pipeline/group_commit.h"
#include "trainscope/collector/pipeline/job_index_writer.h"
#include "trainscope/collector/pipeline/job_status_board.h"
#include "trainscope/collector/pipeline/job_status_builder.h"
#include "trainscope/collector/pipeline/job_storage.h"
#include "trainscope/collector/pipeline/job_token.h"
#include "trainscope/collector/pipeline/job_token_keeper.h"
#include "trainscope/collector/pipeline/rank_loss_judge.h"
#include "trainscope/collector/pipeline/rank_step_progress.h"
#include "trainscope/collector/pipeline/task_round_thread.h"
#include "trainscope/collector/publish/feed_sink.h"
#include "trainscope/collector/publish/record_sink.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/commands.pb.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/log.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

struct JobPipelineOptions {
  std::filesystem::path data_dir;  // the job's log is <data_dir>/jobs/<job_id>
  uint64_t segment_bytes = 64ull << 20;
  bool fsync = true;
  bool use_index = true;     // keep <data_dir>/index.sqlite current
  FeedSink* feed = nullptr;  // null: no live feed
  // Gets each stream record once durable (RecordSink), e.g. a node collector's
  // publisher to the job level (tier/); null: none.
  RecordSink* record_sink = nullptr;
  BadInputCounters* counters = nullptr;              // null: bad commands are not counted
  absl::Duration probe_interval = absl::Seconds(1);  // zero: no clock probes
  absl::Duration rank_update_interval = absl::Milliseconds(100);
  absl::Duration summary_update_interval = absl::Seconds(1);
  uint64_t max_message_bytes = 16u << 20;  // told to agents in HelloAck
  // A halt stops every rank at (highest step any rank reported) + a margin of
  // at least halt_step_margin steps and at least halt_lead of steps, so that
  // ranks behind reach the same boundary, and a rank that reads the halt late
  // has not passed it, instead of one rank stopping while the others wait for
  // it in a collective (CommandRunner::HaltMargin).
  uint64_t halt_step_margin = 2;
  absl::Duration halt_lead = absl::Seconds(1);
  // Clock alignment and step assembly on a thread of the job's own; results
  // go to the feed (steps, clocks, operators) and the index (steps).
  bool analysis = true;
  JobAnalyzerOptions analyzer;
  uint64_t max_analysis_queue_events = 4'000'000;
  // Alert rules, run on the pipeline thread as steps close (needs analysis).
  trainscope::v1::RulesConfig rules;
  // The collector's default halt policy; a job's own (from its first Hello,
  // or a SetHaltPolicy command) replaces it.
  trainscope::v1::HaltPolicy halt_policy;
  uint64_t max_alerts_kept = 100'000;  // raise/clear rows kept in memory for queries
  // A finished (or lost) job's analysis frees its operators this long after
  // the job ended: long enough for `trainscope export` and the viewer to read
  // them from the live collector when a run ends; the log keeps them for
  // --data-dir readers after that.
  absl::Duration release_finished_after = absl::Minutes(10);
  // A rank whose stream closed without goodbye is lost_device only once its
  // peers went on without it: one of them reports lost_device_grace_steps
  // steps past the rank's last, or is still connected lost_device_grace after
  // the close. A peer's goodbye within the grace means the job is ending (no
  // alert); when every rank vanished without goodbye, the first to go is named
  // (the others followed it), with those that went within
  // lost_device_together of it (which went first cannot be told). See
  // docs/alerts.md.
  absl::Duration lost_device_grace = absl::Seconds(10);
  uint64_t lost_device_grace_steps = 3;
  absl::Duration lost_device_together = absl::Seconds(1);
  // One-line notices (recovery, generated tokens); default: stderr.
  std::function<void(absl::string_view)> notice;
};

class JobPipeline {
 public:
  // Opens (or recovers) the job's log, audits it against the index
  // (recovery_audit.h; the loss shows in its status) and starts the pipeline
  // thread. `report` may be null; the caller's index_rebuilt and messages in
  // it are kept.
  static absl::StatusOr<std::unique_ptr<JobPipeline>> Open(std::string job_id,
                                                           JobPipelineOptions options,
                                                           RecoveryReport* report);
  // As Open, over a log the caller opened (tests inject a failing one);
  // `report` (may be null): what opening the log found, audited here.
  static absl::StatusOr<std::unique_ptr<JobPipeline>> OpenWithLog(std::string job_id,
                                                                  JobPipelineOptions options,
                                                                  std::unique_ptr<JobLog> log,
                                                                  RecoveryReport* report = nullptr);
  ~JobPipeline();  // Stop()

  JobPipeline(const JobPipeline&) = delete;
  JobPipeline& operator=(const JobPipeline&) = delete;

  const std::string& job_id() const { return job_id_; }

  // Registers a stream: checks world size and token, tells a reconnect from a
  // duplicate rank, logs StreamOpened, sends the HelloAck on `stream` (after
  // the sync) and then calls `done` on the pipeline thread.
  // Returns UNAVAILABLE (and never calls `done`) when the pipeline has
  // stopped, so callers may hold their own lock while calling.
  absl::Status Attach(AttachRequest request,
                      std::function<void(absl::StatusOr<AttachResult>)> done);

  // Logs `batch` (sequence checks are the session's); `durable` gets OK on the
  // pipeline thread once it is on disk. A batch with refused_reason set is
  // logged as a marker only. Returns UNAVAILABLE (and never calls `durable`)
  // when the pipeline has stopped.
  absl::Status AppendBatch(uint64_t connection_id, trainscope::v1::StreamBatch batch,
                           uint64_t bytes, std::function<void(absl::Status)> durable);

  // Logs a ProbeSample for a reply to one of this pipeline's probes.
  void RecordProbeReply(uint64_t connection_id, trainscope::v1::ProbeReply reply,
                        int64_t receive_unix_ns);

  // `count` Hellos for this job were refused before they reached it (no
  // proof of membership: AgentSession), the last for `why`, coming `from`;
  // counted with the job's own refusals in its summary.
  void CountRefusedHellos(uint64_t count, std::string why, std::string from);

  // The stream is over: logs StreamClosed and marks the rank disconnected.
  // `goodbye` is the agent's Goodbye when it said one.
  void Detach(uint64_t connection_id, std::optional<trainscope::v1::Goodbye> goodbye,
              std::string reason);

  // Checks the token, logs a CommandRecord, syncs, then sends the command to
  // every connected rank and replies with how many it reached.
  void RunCommand(JobCommand command,
                  std::function<void(absl::StatusOr<trainscope::v1::CommandReply>)> done);

  // The job's full status as last published, with the feed sequence it
  // corresponds to and the analysis' memory read now; never waits for the
  // pipeline thread (`trainscope status`, the snapshot port).
  trainscope::v1::JobStatus Status() const;
  // Status() once every call posted before this one ran, e.g. a Detach or
  // CountRefusedHellos, which do not call back; `done` runs on the pipeline
  // thread (at once on the caller's after Stop).
  void Snapshot(std::function<void(trainscope::v1::JobStatus)> done);

  // Answers request.steps / request.marey from the job's analysis (a
  // FeedSnapshot with only those fields and the clocks; error set when the
  // analysis is off). `done` runs on the analysis thread.
  void Query(trainscope::v1::SnapshotRequest request,
             std::function<void(trainscope::v1::FeedSnapshot)> done);

  // The job's alerts (raises and clears, oldest first) matching `query`, as
  // of the pipeline's latest closed step. `done` runs on the pipeline thread.
  void Alerts(trainscope::v1::AlertQuery query,
              std::function<void(std::vector<trainscope::v1::Alert>)> done);

  // Status()'s summary (cheap: no ranks; for listings).
  trainscope::v1::JobSummary summary() const;

  // Ends every connected stream with `status` once the acks before it are out,
  // and refuses new streams from then on (for a quick, clean shutdown).
  void EndStreams(absl::Status status);

  // Runs what is queued, logs StreamClosed for live streams, syncs and joins.
  void Stop();
  // Stop(), then closes the job's log, releasing its LOCK so that the job's
  // files can be removed (retention). The object stays valid: calls after it
  // are refused as after Stop().
  void StopAndCloseLog();

 private:
  // Runs on the pipeline thread with `run` true, or at once on the caller's
  // thread with `run` false when the pipeline has stopped (to fail its caller).
  using Task = TaskRoundThread::Task;
  using CommandDone = std::function<void(absl::StatusOr<trainscope::v1::CommandReply>)>;

  JobPipeline(std::string job_id, JobPipelineOptions options, JobStorage storage);
  // Recovers the state, starts the analysis and the pipeline thread.
  static std::unique_ptr<JobPipeline> Start(std::string job_id, JobPipelineOptions options,
                                            JobStorage storage);

  absl::Status Stopped() const;
  // The pipeline thread's rounds (TaskRoundThread): each commits the round's
  // tasks as a group and runs the timers; the last logs the streams the
  // shutdown cuts and flushes what is left.
  void EndRound(size_t tasks_run);
  void Finish();

  void RunTimers(absl::Time now, bool force);
  absl::Time NextTimer() const;

  // Pipeline-thread helpers.
  void RecoverState();
  void DoAttach(AttachRequest& request, std::function<void(absl::StatusOr<AttachResult>)>& done);
  void DoAppendBatch(uint64_t connection_id, trainscope::v1::StreamBatch& batch, uint64_t bytes,
                     std::function<void(absl::Status)>& durable);
  // Logs the close and updates the table. collector_stopping: the collector
  // cuts the stream as it stops (the rank did not vanish). exit_error: the
  // goodbye's error (an abnormal end).
  void CloseConnection(uint64_t connection_id, bool goodbye, const std::string& reason,
                       bool collector_stopping = false, const std::string& exit_error = "");
  // Runs a command (authorised or the collector's own): logs it, then sends
  // it to every rank once durable.
  void ExecuteCommand(const JobCommand& command, CommandDone done);
  trainscope::v1::JobSummary BuildSummary() const {
    return status_.Summary(event_rate_.events_per_second());
  }
  // Hands `record` to the analysis (and the record sink) once durable.
  void Analyse(trainscope::v1::LogRecord record);
  void HandOnDurable(std::vector<trainscope::v1::LogRecord> records);
  void StartAnalysis();
  // A closed step's index row, alerts and halt by policy (between its
  // operators and the step on the feed: AnalysisFeed).
  void OnStepClosed(const trainscope::v1::StepReport& step);
  // Alerts to the feed and the index.
  void PublishAlerts(const std::vector<trainscope::v1::Alert>& alerts);
  // Raises lost_device for the losses the judge decides on now.
  void JudgeLosses(int64_t now_unix_ns);
  void HaltByPolicy(const HaltDecision& decision);
  void Notice(absl::string_view line) const;

  const std::string job_id_;
  const JobPipelineOptions options_;
  const std::filesystem::path job_dir_;

  // Owned by the pipeline thread.
  std::unique_ptr<JobLog> log_;
  JobTokenKeeper tokens_;
  AgentStreamTable streams_;
  CommandRunner commands_;
  AttachHandshake attach_;
  AlertStage alerts_;
  RankStepProgress step_progress_;
  RankLossJudge loss_judge_;
  JobIndexWriter index_;
  GroupCommit commit_;
  FeedFlushSchedule flushes_;
  EventRateMeter event_rate_;
  FinishedJobRelease release_;
  JobStatusBuilder status_;
  AnalysisFeed analysis_feed_;
  JobStatusBoard status_board_;  // thread-safe: written here, read by Status()

  base::Mutex stop_mu_;  // serialises Stop and StopAndCloseLog
  TaskRoundThread thread_;
  // Null when options.analysis is off. Stopped before the pipeline thread,
  // since its outputs post to it.
  std::unique_ptr<AnalysisWorker> analysis_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_PIPELINE_H_
