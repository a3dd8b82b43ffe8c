#include "trainscope/collector/pipeline/job_pipeline.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::collector {
namespace {

int64_t NowUnixNs() { return absl::ToUnixNanos(absl::Now()); }

JobStorageOptions StorageOptions(const JobPipelineOptions& options) {
  return {.data_dir = options.data_dir,
          .segment_bytes = options.segment_bytes,
          .fsync = options.fsync,
          .use_index = options.use_index,
          .notice = options.notice};
}

}  // namespace

// ---------------------------------------------------------------- lifetime

absl::StatusOr<std::unique_ptr<JobPipeline>> JobPipeline::Open(std::string job_id,
                                                               JobPipelineOptions options,
                                                               RecoveryReport* report) {
  absl::StatusOr<JobStorage> storage = OpenJobStorage(job_id, StorageOptions(options), report);
  if (!storage.ok()) return storage.status();
  return Start(std::move(job_id), std::move(options), std::move(*storage));
}

absl::StatusOr<std::unique_ptr<JobPipeline>> JobPipeline::OpenWithLog(std::string job_id,
                                                                      JobPipelineOptions options,
                                                                      std::unique_ptr<JobLog> log,
                                                                      RecoveryReport* report) {
  absl::StatusOr<JobStorage> storage =
      JobStorageOverLog(job_id, StorageOptions(options), std::move(log), report);
  if (!storage.ok()) return storage.status();
  return Start(std::move(job_id), std::move(options), std::move(*storage));
}

std::unique_ptr<JobPipeline> JobPipeline::Start(std::string job_id, JobPipelineOptions options,
                                                JobStorage storage) {
  std::unique_ptr<JobPipeline> pipeline(
      new JobPipeline(std::move(job_id), std::move(options), std::move(storage)));
  pipeline->RecoverState();
  pipeline->StartAnalysis();
  JobPipeline* raw = pipeline.get();
  pipeline->thread_.Start({.next_timer = [raw] { return raw->NextTimer(); },
                           .end_round = [raw](size_t tasks_run) { raw->EndRound(tasks_run); },
                           .finish = [raw] { raw->Finish(); }});
  return pipeline;
}

JobPipeline::JobPipeline(std::string job_id, JobPipelineOptions options, JobStorage storage)
    : job_id_(std::move(job_id)),
      options_(std::move(options)),
      job_dir_(options_.data_dir / "jobs" / job_id_),
      log_(std::move(storage.log)),
      tokens_(job_id_, job_dir_, std::move(storage.token)),
      streams_(job_id_),
      commands_(job_id_,
                {.steps = options_.halt_step_margin,
                 .lead_ns = absl::ToInt64Nanoseconds(options_.halt_lead)},
                &tokens_),
      attach_(job_id_,
              {.max_message_bytes = options_.max_message_bytes,
               .notice = [this](absl::string_view line) { Notice(line); }},
              &streams_, &tokens_, &commands_),
      alerts_(job_id_,
              AlertStage::Options{.enabled = options_.analysis,
                                  .rules = options_.rules,
                                  .max_alerts_kept = options_.max_alerts_kept,
                                  .notice = [this](absl::string_view line) { Notice(line); }}),
      loss_judge_(RankLossJudge::Options{.grace = options_.lost_device_grace,
                                         .grace_steps = options_.lost_device_grace_steps,
                                         .together = options_.lost_device_together}),
      index_(job_id_, std::move(storage.index), log_.get(),
             [this](absl::string_view line) { Notice(line); }),
      commit_(
          job_id_, log_.get(),
          {.feed = options_.feed,
           .durable =
               [this](std::vector<v1::LogRecord> records) { HandOnDurable(std::move(records)); },
           .publish_status =
               [this](uint64_t feed_sequence) {
                 status_.Publish(event_rate_.events_per_second(), feed_sequence,
                                 streams_.TakeRanksToRepublish(), &status_board_);
               },
           .notice = [this](absl::string_view line) { Notice(line); }}),
      flushes_({.rank_interval = options_.rank_update_interval,
                .summary_interval = options_.summary_update_interval,
                .probe_interval = options_.probe_interval}),
      release_(options_.release_finished_after),
      status_(job_id_, NowUnixNs(), options_.analyzer.strings.max_names, &streams_, &commands_,
              &alerts_),
      analysis_feed_(
          job_id_, options_.feed,
          {.post =
               [this](std::function<void()> output) {
                 thread_.Post([output = std::move(output)](bool run) {
                   if (run) output();
                 });
               },
           .queue = [this](v1::FeedUpdate update) { commit_.QueueFeed(std::move(update)); },
           .step_closed = [this](const v1::StepReport& step) { OnStepClosed(step); },
           .loss_epoch_closed =
               [this](const LossTracker::ClosedEpoch& epoch) {
                 PublishAlerts(alerts_.OnLossEpoch(epoch, step_progress_.Highest(), NowUnixNs()));
               }}) {
  status_.SetRecovery(std::move(storage.recovery), std::move(storage.events_lost_by_rank));
}

JobPipeline::~JobPipeline() { Stop(); }

void JobPipeline::Notice(absl::string_view line) const {
  if (options_.notice) {
    options_.notice(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

absl::Status JobPipeline::Stopped() const {
  return absl::UnavailableError(absl::StrCat("job ", job_id_, ": the collector is shutting down"));
}

void JobPipeline::Stop() {
  base::MutexLock stop_lock(&stop_mu_);
  if (analysis_) analysis_->Stop();
  thread_.Stop();
}

void JobPipeline::StopAndCloseLog() {
  Stop();
  base::MutexLock stop_lock(&stop_mu_);
  // The thread is joined: nothing uses the log any more (the index writer
  // flushed its last rows in Finish). The stopped analysis stays:
  // Query may still reach it from another thread.
  log_.reset();
  // Queries no longer reach the stopped analysis; its operators and
  // buffers go back to the system.
  if (analysis_) analysis_->Release();
}

void JobPipeline::RecoverState() {
  const JobLogState& state = log_->state();
  streams_.Recover(state);
  alerts_.Start(commands_.Recover(state.commands), options_.halt_policy);
  if (!streams_.ranks().empty()) index_.MarkJob();
  flushes_.MarkSummaryChanged();
  commit_.MarkStatusChanged();
  commit_.Publish();
}

// ---------------------------------------------------------------- the thread

absl::Time JobPipeline::NextTimer() const {
  absl::Time next = flushes_.Next(streams_.HasChangedRanks(), streams_.HasStreams());
  next = std::min(next, index_.NextFlush());
  return std::min(next, loss_judge_.NextDeadline());
}

void JobPipeline::EndRound(size_t tasks_run) {
  if (tasks_run > 0) commit_.MarkStatusChanged();
  commit_.Commit();
  RunTimers(absl::Now(), /*force=*/false);
}

void JobPipeline::Finish() {
  // Streams still open are cut by the shutdown; say so in the log.
  for (uint64_t id : streams_.ConnectionIds()) {
    CloseConnection(id, false, "collector shutting down", /*collector_stopping=*/true);
  }
  commit_.MarkStatusChanged();
  commit_.Commit();
  RunTimers(absl::Now(), /*force=*/true);
  index_.MarkSegments();
  index_.Flush(absl::Now(), /*force=*/true, status_.created_unix_ns(), streams_.world_size());
}

void JobPipeline::RunTimers(absl::Time now, bool force) {
  JudgeLosses(absl::ToUnixNanos(now));
  const FeedFlushSchedule::Due due = flushes_.Take(now, force, streams_.HasChangedRanks());
  if (due.ranks) {
    for (v1::RankStatus& rank : streams_.TakeChangedRanks()) {
      v1::FeedUpdate update;
      *update.mutable_rank() = std::move(rank);
      commit_.QueueFeed(std::move(update));
    }
  }
  if (due.summary) {
    event_rate_.Sample(now, streams_.events_received());
    // A job whose events stopped still has a rate to bring down to 0: the
    // summary stays due (the status RPC reads the rate too) until it is.
    flushes_.SetRateMoving(!event_rate_.settled());
    v1::FeedUpdate update;
    *update.mutable_job() = BuildSummary();
    release_.OnState(update.job().state(), now);
    commit_.QueueFeed(std::move(update));
  }
  // Every rank is gone: once the job has been over for release_finished_after
  // the analysis closes its last steps (their reports come back here and are
  // published) and frees the job's operators.
  if (analysis_) analysis_->SetJobFinished(release_.Due(now));
  commit_.Publish();
  index_.Flush(now, /*force=*/false, status_.created_unix_ns(), streams_.world_size());

  if (flushes_.ProbeDue(now, force)) streams_.SendProbes(NowUnixNs());
}

// ---------------------------------------------------------------- streams

absl::Status JobPipeline::Attach(AttachRequest request,
                                 std::function<void(absl::StatusOr<AttachResult>)> done) {
  Task task = [this, request = std::move(request), done = std::move(done)](bool) mutable {
    DoAttach(request, done);
  };
  return thread_.TryPost(task) ? absl::OkStatus() : Stopped();
}

void JobPipeline::DoAttach(AttachRequest& request,
                           std::function<void(absl::StatusOr<AttachResult>)>& done) {
  const v1::Hello& hello = request.hello;
  const uint32_t rank = hello.rank();
  if (attach_.ending()) {
    return commit_.ReplyInTurn(
        [done = std::move(done), ending = *attach_.ending()] { done(ending); });
  }
  absl::StatusOr<AttachHandshake::Admission> admitted =
      attach_.Admit(hello, AttachHandshake::Origin(request.peer, hello.host(), hello.pid()));
  if (!admitted.ok()) {
    flushes_.MarkSummaryChanged();  // the refusal shows in the summary
    return commit_.ReplyInTurn(
        [done = std::move(done), refused = admitted.status()] { done(refused); });
  }
  if (admitted->replaced) {
    CloseConnection(admitted->replaced->connection_id, false,
                    absl::StrCat("replaced: ", admitted->replaced->why));
  }

  v1::LogRecord record = AttachHandshake::OpenedRecord(hello);
  const absl::Status appended = commit_.Append(record);
  if (appended.ok()) Analyse(record);
  AttachHandshake::Joined joined =
      attach_.Open(hello, *admitted, std::move(request.stream), std::move(request.peer),
                   log_->state(), NowUnixNs());
  flushes_.MarkSummaryChanged();
  if (joined.first_rank) index_.MarkJob();
  index_.MarkStream(joined.key);
  loss_judge_.Forget(rank);
  PublishAlerts(alerts_.OnDeviceBack(rank, step_progress_.LastStepOf(rank), NowUnixNs()));
  if (std::optional<JobCommand> policy =
          AttachHandshake::PolicyCommand(hello, alerts_.policy_from_job())) {
    ExecuteCommand(*policy, [this](absl::StatusOr<v1::CommandReply> reply) {
      if (!reply.ok()) {
        Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                            ": the job's halt policy was refused: ", reply.status().message()));
      }
    });
  }

  commit_.OnDurable([this, joined = std::move(joined), appended,
                     done = std::move(done)](const absl::Status& sync_status) mutable {
    const absl::Status status = appended.ok() ? sync_status : appended;
    if (!status.ok() && streams_.Find(joined.connection_id) != nullptr) {
      CloseConnection(joined.connection_id, false, std::string(status.message()));
      return commit_.AfterPublish([done = std::move(done), status] { done(status); });
    }
    // The HelloAck goes out now, in completion order (before a command of
    // this round reaches the acked streams); the caller hears after the publish.
    commit_.AfterPublish(
        [done = std::move(done),
         result = attach_.Acknowledge(joined)]() mutable {  // ABORTED when replaced
          done(std::move(result));
        });
  });
}

void JobPipeline::CloseConnection(uint64_t connection_id, bool goodbye, const std::string& reason,
                                  bool collector_stopping, const std::string& exit_error) {
  AgentStreamTable::Connection* connection = streams_.Find(connection_id);
  if (connection == nullptr) return;
  const StreamKey key = connection->key;
  v1::LogRecord record;
  v1::StreamClosed* closed = record.mutable_stream_closed();
  closed->set_rank(key.rank);
  closed->set_agent_instance_id(key.agent_instance_id);
  closed->set_goodbye(goodbye);
  closed->set_reason(reason);
  closed->set_collector_stopping(collector_stopping);
  closed->set_error(exit_error);
  if (commit_.Append(record).ok()) Analyse(std::move(record));  // a failure shows at the next Sync
  if (streams_.Close(connection_id, goodbye, exit_error, collector_stopping, NowUnixNs())
          ->current) {
    flushes_.MarkSummaryChanged();
  }
  index_.MarkStream(key);
  index_.MarkSegments();
}

absl::Status JobPipeline::AppendBatch(uint64_t connection_id, v1::StreamBatch batch, uint64_t bytes,
                                      std::function<void(absl::Status)> durable) {
  Task task = [this, connection_id, batch = std::move(batch), bytes, durable = std::move(durable)](
                  bool) mutable { DoAppendBatch(connection_id, batch, bytes, durable); };
  return thread_.TryPost(task) ? absl::OkStatus() : Stopped();
}

void JobPipeline::DoAppendBatch(uint64_t connection_id, v1::StreamBatch& batch, uint64_t bytes,
                                std::function<void(absl::Status)>& durable) {
  const AgentStreamTable::Connection* connection = streams_.Find(connection_id);
  if (connection == nullptr) {
    commit_.ReplyInTurn([this, durable = std::move(durable)] {
      durable(absl::AbortedError(absl::StrCat(
          "job ", job_id_, ": the stream is no longer attached (replaced or closed)")));
    });
    return;
  }
  const uint32_t rank = connection->key.rank;
  const StreamKey key = connection->key;
  const bool refused = !batch.refused_reason().empty();
  v1::LogRecord record;
  record.mutable_batch()->Swap(&batch);
  const absl::Status appended = commit_.Append(record);
  // Counted once durable (or refused by the log), never before: a batch the
  // disk did not take is not "received".
  const v1::EventBatch& logged = record.batch().batch();
  std::optional<v1::DropCounters> drops;
  if (logged.has_drops()) drops = logged.drops();
  const uint64_t sequence = logged.sequence();
  const uint64_t events = static_cast<uint64_t>(logged.kind_size());
  const int64_t logged_unix_ns = record.logged_unix_ns();
  if (appended.ok()) {
    // A peer going on past a rank whose stream closed may decide its loss.
    if (!refused && step_progress_.Note(rank, logged)) JudgeLosses(NowUnixNs());
    if (!refused) Analyse(std::move(record));
  }
  commit_.OnDurable([this, rank, key, refused, bytes, sequence, events, logged_unix_ns, appended,
                     drops = std::move(drops),
                     durable = std::move(durable)](const absl::Status& sync_status) mutable {
    const absl::Status status = appended.ok() ? sync_status : appended;
    if (status.ok()) {
      streams_.OnBatch(rank, sequence, events, drops ? &*drops : nullptr, refused, bytes,
                       logged_unix_ns);
      // The index's count is what a later recovery measures losses against.
      index_.MarkStream(key);
    } else {
      streams_.OnStoreRefused(rank, refused ? 0 : events);
    }
    flushes_.MarkCountersChanged();
    commit_.AfterPublish([durable = std::move(durable), status] { durable(status); });
  });
}

void JobPipeline::RecordProbeReply(uint64_t connection_id, v1::ProbeReply reply,
                                   int64_t receive_unix_ns) {
  thread_.Post([this, connection_id, reply = std::move(reply), receive_unix_ns](bool run) mutable {
    if (!run) return;
    std::optional<v1::ProbeSample> sample =
        streams_.TakeProbeReply(connection_id, std::move(reply), receive_unix_ns);
    if (!sample) return;  // unknown stream, or an unknown or expired probe
    v1::LogRecord record;
    *record.mutable_probe() = std::move(*sample);
    if (commit_.Append(record).ok()) Analyse(std::move(record));
  });
}

void JobPipeline::CountRefusedHellos(uint64_t count, std::string why, std::string from) {
  thread_.Post([this, count, why = std::move(why), from = std::move(from)](bool run) mutable {
    if (!run) return;
    streams_.CountRefusedHello(std::move(why), std::move(from), count);
    flushes_.MarkSummaryChanged();
  });
}

void JobPipeline::Detach(uint64_t connection_id, std::optional<v1::Goodbye> goodbye,
                         std::string reason) {
  thread_.Post([this, connection_id, goodbye = std::move(goodbye),
                reason = std::move(reason)](bool run) {
    if (!run) return;
    const AgentStreamTable::Connection* connection = streams_.Find(connection_id);
    if (connection == nullptr) return;
    const uint32_t rank = connection->key.rank;
    const bool current = streams_.IsCurrent(connection_id);
    CloseConnection(connection_id, goodbye.has_value(), reason, /*collector_stopping=*/false,
                    goodbye ? goodbye->error() : "");
    if (goodbye && current) streams_.SetDrops(rank, goodbye->drops());
    if (!goodbye && current && !commands_.halted() && alerts_.enabled()) {
      // Judged after a grace: at the end of a job every stream closes within
      // a moment, and one that could not say goodbye has not failed its peers.
      loss_judge_.OnLost(rank, step_progress_.LastStepOf(rank), NowUnixNs(),
                         /*peers_connected=*/streams_.AnyConnected());
    }
    // A goodbye may end a pending loss's grace (the job is ending); the last
    // rank gone decides the ones left.
    JudgeLosses(NowUnixNs());
  });
}

void JobPipeline::EndStreams(absl::Status status) {
  thread_.Post([this, status = std::move(status)](bool run) {
    if (!run) return;
    attach_.RefuseNewStreams(status);
    // In turn after the replies already due, so their acks go out first.
    commit_.ReplyInTurn([this, status] { streams_.FinishAll(status); });
  });
}

// ---------------------------------------------------------------- commands

void JobPipeline::RunCommand(JobCommand command, CommandDone done) {
  thread_.Post([this, command = std::move(command), done = std::move(done)](bool run) mutable {
    if (!run) return done(Stopped());
    if (absl::Status refused = commands_.Authorize(command); !refused.ok()) {
      if (options_.counters != nullptr) {
        const char* name = CommandName(command.kind);
        options_.counters->Count(
            refused, command.requested_by.empty()
                         ? absl::StrCat("command ", name, " for job ", job_id_)
                         : absl::StrCat(command.requested_by, " (", name, " job ", job_id_, ")"));
      }
      return done(refused);
    }
    if (absl::Status refused = commands_.Admit(command, streams_.State(commands_.halted()));
        !refused.ok()) {
      return done(refused);
    }
    ExecuteCommand(command, std::move(done));
  });
}

void JobPipeline::ExecuteCommand(const JobCommand& command, CommandDone done) {
  if (command.kind == JobCommand::Kind::kSetHaltPolicy) {
    if (absl::Status applied = alerts_.ApplyHaltPolicy(command.halt_policy, command.requested_by);
        !applied.ok()) {
      return done(applied);
    }
    alerts_.MarkPolicyFromJob();
  }
  CommandRunner::Prepared prepared =
      commands_.Prepare(command, {.any_step = !step_progress_.empty(),
                                  .highest_step = step_progress_.Highest(),
                                  .step_ns = step_progress_.ShortestStepNs(),
                                  .reachable_ranks = streams_.AckedCount(),
                                  .now_unix_ns = NowUnixNs()});
  v1::LogRecord record;
  *record.mutable_command() = prepared.record;
  const absl::Status appended = commit_.Append(record);
  v1::FeedUpdate update;
  *update.mutable_command() = prepared.record;
  commit_.QueueFeed(std::move(update));
  flushes_.MarkSummaryChanged();

  commit_.OnDurable([this, appended, prepared = std::move(prepared),
                     done = std::move(done)](const absl::Status& sync_status) mutable {
    absl::Status status = appended.ok() ? sync_status : appended;
    if (!status.ok())
      return commit_.AfterPublish([done = std::move(done), status] { done(status); });
    // Here, once durable and in completion order, so that a rank acked in
    // this round gets a halt exactly once: from here or after its HelloAck.
    commands_.Commit(prepared);
    const uint32_t reached = streams_.SendToAcked(prepared.control);
    commit_.AfterPublish(
        [done = std::move(done),
         reply = commands_.Reply(prepared, reached, streams_.world_size())]() mutable {
          done(std::move(reply));
        });
  });
}

// ---------------------------------------------------------------- analysis

// Records go to the analysis only after the group commit made them durable.
void JobPipeline::HandOnDurable(std::vector<v1::LogRecord> records) {
  if (options_.record_sink != nullptr) {
    for (const v1::LogRecord& record : records) options_.record_sink->OnDurable(job_id_, record);
  }
  if (analysis_) analysis_->Submit(std::move(records));
}

void JobPipeline::Analyse(v1::LogRecord record) {
  if (analysis_ || options_.record_sink != nullptr) commit_.HandOn(std::move(record));
}

void JobPipeline::StartAnalysis() {
  if (!options_.analysis) return;
  AnalysisWorkerOptions worker_options;
  worker_options.max_queued_events = options_.max_analysis_queue_events;
  worker_options.notice = [this](absl::string_view line) { Notice(line); };
  analysis_ = std::make_unique<AnalysisWorker>(std::move(worker_options), options_.analyzer,
                                               analysis_feed_.Outputs());
  status_.SetAnalysis(analysis_.get());
}

void JobPipeline::OnStepClosed(const v1::StepReport& step) {
  index_.AddStep(step);
  AlertStage::StepOutcome outcome = alerts_.OnStep(step, NowUnixNs(), commands_.halted());
  PublishAlerts(outcome.alerts);
  if (outcome.halt) HaltByPolicy(*outcome.halt);
}

void JobPipeline::Query(v1::SnapshotRequest request, std::function<void(v1::FeedSnapshot)> done) {
  if (!analysis_) {
    v1::FeedSnapshot reply;
    reply.set_error(
        absl::StrCat("job ", job_id_, ": the collector runs without analysis (--analysis=false)"));
    return done(std::move(reply));
  }
  analysis_->Query(std::move(request), std::move(done));
}

// ---------------------------------------------------------------- alerts

void JobPipeline::PublishAlerts(const std::vector<v1::Alert>& alerts) {
  for (const v1::Alert& alert : alerts) {
    index_.AddAlert(alert);
    v1::FeedUpdate update;
    *update.mutable_alert() = alert;
    commit_.QueueFeed(std::move(update));
  }
  if (!alerts.empty()) flushes_.MarkSummaryChanged();
}

void JobPipeline::JudgeLosses(int64_t now_unix_ns) {
  if (loss_judge_.empty()) return;
  if (commands_.halted()) {
    loss_judge_.Clear();  // a halt's ranks stop on purpose
    return;
  }
  for (const RankLossJudge::Verdict& lost :
       loss_judge_.Judge(now_unix_ns, streams_.ranks(), step_progress_, streams_.AnyConnected())) {
    PublishAlerts(alerts_.OnDeviceLost(lost.rank, lost.last_step, now_unix_ns));
  }
}

void JobPipeline::HaltByPolicy(const HaltDecision& decision) {
  JobCommand command;
  command.kind = JobCommand::Kind::kHalt;
  command.reason = decision.reason;
  command.requested_by = "halt policy";
  Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                      ": halting by policy: ", decision.reason));
  ExecuteCommand(command, [this](absl::StatusOr<v1::CommandReply> reply) {
    if (!reply.ok()) {
      Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                          ": the policy's halt failed: ", reply.status().message()));
    }
  });
}

void JobPipeline::Alerts(v1::AlertQuery query, std::function<void(std::vector<v1::Alert>)> done) {
  thread_.Post([this, query = std::move(query), done = std::move(done)](bool run) mutable {
    if (!run) return done({});
    done(alerts_.Select(query));
  });
}

// ---------------------------------------------------------------- status

v1::JobStatus JobPipeline::Status() const {
  v1::JobStatus status = status_board_.Read();
  status_.AddAnalysisMemory(&status);
  return status;
}

void JobPipeline::Snapshot(std::function<void(v1::JobStatus)> done) {
  thread_.Post([this, done = std::move(done)](bool run) mutable {
    if (!run) return done(Status());
    // After this round's publish, which includes what the tasks before it did.
    commit_.ReplyInTurn([this, done = std::move(done)] { done(Status()); });
  });
}

v1::JobSummary JobPipeline::summary() const { return status_board_.Summary(); }

}  // namespace trainscope::collector
