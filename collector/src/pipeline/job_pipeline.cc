#include "trainscope/collector/pipeline/job_pipeline.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline_clock.h"
#include "trainscope/collector/ingest/hello_validator.h"

namespace trainscope::collector {

absl::StatusOr<std::unique_ptr<JobPipeline>> JobPipeline::Open(std::string job_id,
                                                               JobPipelineOptions options,
                                                               RecoveryReport* report) {
  if (absl::Status s = ValidateJobId(job_id, "job_id"); !s.ok()) return s;
  const std::filesystem::path job_dir = options.data_dir / "jobs" / job_id;
  JobLog::Options log_options;
  log_options.dir = job_dir;
  log_options.segment_bytes = options.segment_bytes;
  log_options.fsync = options.fsync;
  RecoveryReport local_report;
  if (report == nullptr) report = &local_report;
  absl::StatusOr<std::unique_ptr<JobLog>> log = JobLog::Open(log_options, report);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("job ", job_id, ": cannot open its log in ", job_dir.string(),
                                     ": ", log.status().message()));
  }
  return OpenWithLog(std::move(job_id), std::move(options), std::move(*log));
}

absl::StatusOr<std::unique_ptr<JobPipeline>> JobPipeline::OpenWithLog(std::string job_id,
                                                                      JobPipelineOptions options,
                                                                      std::unique_ptr<JobLog> log) {
  if (absl::Status s = ValidateJobId(job_id, "job_id"); !s.ok()) return s;
  const std::filesystem::path job_dir = options.data_dir / "jobs" / job_id;
  std::unique_ptr<LogIndex> index;
  if (options.use_index) {
    absl::StatusOr<std::unique_ptr<LogIndex>> opened =
        LogIndex::Open(options.data_dir / "index.sqlite");
    if (opened.ok()) {
      index = std::move(*opened);
    } else if (options.notice) {
      options.notice(absl::StrCat("trainscope-collector: job ", job_id,
                                  ": running without the index: ", opened.status().message()));
    }
  }
  absl::StatusOr<JobToken> token = ReadJobToken(job_dir);
  if (!token.ok()) return token.status();
  std::unique_ptr<JobPipeline> pipeline(new JobPipeline(
      std::move(job_id), std::move(options), std::move(log), std::move(index), std::move(*token)));
  pipeline->RecoverState();
  pipeline->StartAnalysis();
  pipeline->StartAlerts();
  JobPipeline* raw = pipeline.get();
  pipeline->thread_ = std::thread([raw] { raw->Run(); });
  return pipeline;
}

JobPipeline::JobPipeline(std::string job_id, JobPipelineOptions options,
                         std::unique_ptr<JobLog> log, std::unique_ptr<LogIndex> index,
                         JobToken token)
    : job_id_(std::move(job_id)),
      options_(std::move(options)),
      job_dir_(options_.data_dir / "jobs" / job_id_),
      log_(std::move(log)),
      index_(std::move(index)),
      token_(std::move(token)),
      created_unix_ns_(NowUnixNs()) {}

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

void JobPipeline::Post(Task task) {
  if (!TryPost(task)) task(false);
}

bool JobPipeline::TryPost(Task& task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return false;
  tasks_.push_back(std::move(task));
  return true;
}

void JobPipeline::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  if (analysis_) analysis_->Stop();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

// ---------------------------------------------------------------- recovery

void JobPipeline::RecoverState() {
  const JobLogState& state = log_->state();
  for (const auto& [key, progress] : state.streams) {
    if (progress.hello.world_size() != 0) world_size_ = progress.hello.world_size();
    v1::RankStatus& r = ranks_[key.rank];
    // Counters are cumulative over a rank's incarnations; identity is the latest one.
    const bool newer =
        r.agent_instance_id() == 0 || progress.hello.restart_count() >= r.restart_count();
    r.set_rank(key.rank);
    r.set_events_received(r.events_received() + progress.events);
    r.set_batches_received(r.batches_received() + progress.batches);
    r.set_bytes_received(r.bytes_received() + progress.bytes);
    r.set_batches_refused(r.batches_refused() + progress.batches_refused);
    events_total_ += progress.events;
    bytes_total_ += progress.bytes;
    if (newer) {
      r.set_restart_count(progress.hello.restart_count());
      r.set_agent_instance_id(key.agent_instance_id);
      r.set_host(progress.hello.host());
      r.set_pid(progress.hello.pid());
      r.set_device(progress.hello.device());
      r.set_framework(progress.hello.framework());
      r.set_framework_version(progress.hello.framework_version());
      r.set_said_goodbye(progress.goodbye);
      r.set_exit_error(progress.exit_error);
      if (progress.closed && (!progress.goodbye || !progress.exit_error.empty())) {
        vanished_ranks_.insert(key.rank);
      } else {
        vanished_ranks_.erase(key.rank);
      }
      r.set_last_sequence(progress.last_sequence);
      *r.mutable_agent_drops() = progress.drops;
      r.set_world_size(progress.hello.world_size());
    }
  }
  commands_ = state.commands;
  for (const v1::CommandRecord& c : commands_) {
    if (c.command() == "halt") {
      halted_ = true;
      // Ranks that reconnect after a collector restart still stop where the
      // others were told to.
      v1::HaltRequest halt;
      halt.set_halt_id(c.halt_id());
      halt.set_reason(c.reason());
      halt.set_requested_by(c.requested_by());
      halt.set_requested_unix_ns(c.requested_unix_ns());
      halt.set_halt_at_step(c.halt_at_step());
      halt_ = std::move(halt);
    }
    if (c.command() == "enable") recording_ = true;
    if (c.command() == "disable") recording_ = false;
    if (c.command() == "enable-loss-contribution") loss_contribution_ = true;
    if (c.command() == "disable-loss-contribution") loss_contribution_ = false;
    if (c.command() == "policy") {
      halt_policy_ = c.halt_policy();
      halt_policy_from_job_ = true;
    }
    next_halt_id_ = std::max(next_halt_id_, c.halt_id() + 1);
  }
  if (!ranks_.empty()) IndexJob();
  summary_changed_ = true;
  absl::MutexLock lock(&mu_);
  published_summary_ = BuildSummary();
}

// ---------------------------------------------------------------- the thread

absl::Time JobPipeline::NextTimer() const {
  absl::Time next = absl::InfiniteFuture();
  if (!dirty_ranks_.empty() || summary_changed_) next = std::min(next, next_rank_flush_);
  if (counters_changed_) next = std::min(next, std::max(next_rank_flush_, next_summary_flush_));
  if (options_.probe_interval > absl::ZeroDuration() && !connections_.empty()) {
    next = std::min(next, next_probe_);
  }
  if (IndexDirty()) next = std::min(next, next_index_flush_);
  for (const auto& [rank, pending] : pending_losses_) {
    next = std::min(next, absl::FromUnixNanos(pending.lost_unix_ns) + options_.lost_device_grace);
  }
  return next;
}

void JobPipeline::Run() {
  while (true) {
    std::deque<Task> tasks;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithDeadline(absl::Condition(this, &JobPipeline::HasWorkLocked), NextTimer());
      tasks.swap(tasks_);
      stopping = stopping_ && tasks.empty();
    }
    if (stopping) break;
    for (Task& task : tasks) task(true);
    CommitAndComplete();
    RunTimers(absl::Now(), /*force=*/false);
  }
  // Streams still open are cut by the shutdown; say so in the log.
  std::vector<uint64_t> live;
  for (const auto& [id, connection] : connections_) live.push_back(id);
  for (uint64_t id : live) {
    CloseConnection(id, false, "collector shutting down", /*collector_stopping=*/true);
  }
  CommitAndComplete();
  RunTimers(absl::Now(), /*force=*/true);
  IndexSegments();
  FlushIndex(absl::Now(), /*force=*/true);
}

absl::Status JobPipeline::AppendRecord(v1::LogRecord& record) {
  record.set_logged_unix_ns(NowUnixNs());
  needs_sync_ = true;
  absl::Status s = log_->Append(record);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("job ", job_id_, ": cannot append to its log: ", s.message()));
  }
  return s;
}

void JobPipeline::CommitAndComplete() {
  absl::Status sync_status = absl::OkStatus();
  if (needs_sync_) {
    needs_sync_ = false;
    if (absl::Status s = log_->Sync(); !s.ok()) {
      sync_status = absl::UnavailableError(
          absl::StrCat("job ", job_id_, ": could not make the log durable: ", s.message()));
      Notice(absl::StrCat("trainscope-collector: ", sync_status.message()));
    }
  }
  // The analysis sees only what is durable: what failed to sync comes again
  // when the agents resend it.
  if (!pending_analysis_.empty()) {
    if (sync_status.ok() && analysis_) analysis_->Submit(std::move(pending_analysis_));
    pending_analysis_.clear();
  }
  PublishPending();
  std::vector<Completion> completions;
  completions.swap(after_sync_);
  for (Completion& completion : completions) completion(sync_status);
}

void JobPipeline::QueueFeed(v1::FeedUpdate update) {
  update.set_job_id(job_id_);
  pending_feed_.push_back(std::move(update));
}

void JobPipeline::PublishPending() {
  if (pending_feed_.empty()) return;
  const int64_t now = NowUnixNs();
  for (v1::FeedUpdate& update : pending_feed_) {
    update.set_sequence(++feed_sequence_);
    update.set_published_unix_ns(now);
    if (options_.feed != nullptr) options_.feed->Publish(std::move(update));
  }
  pending_feed_.clear();
}

void JobPipeline::RunTimers(absl::Time now, bool force) {
  if (!pending_losses_.empty()) JudgePendingLosses(absl::ToUnixNanos(now));
  const bool summary_due =
      summary_changed_ || (counters_changed_ && (force || now >= next_summary_flush_));
  if ((force || now >= next_rank_flush_) && (!dirty_ranks_.empty() || summary_due)) {
    for (const auto& [rank, unused] : dirty_ranks_) {
      v1::FeedUpdate update;
      *update.mutable_rank() = ranks_[rank];
      QueueFeed(std::move(update));
    }
    dirty_ranks_.clear();
    next_rank_flush_ = now + options_.rank_update_interval;
    if (summary_due) {
      rate_samples_.emplace_back(now, events_total_);
      while (rate_samples_.size() > 1 && now - rate_samples_.front().first > absl::Seconds(5)) {
        rate_samples_.pop_front();
      }
      const double seconds = absl::ToDoubleSeconds(now - rate_samples_.front().first);
      events_per_second_ =
          seconds > 0 ? static_cast<double>(events_total_ - rate_samples_.front().second) / seconds
                      : 0;
      v1::FeedUpdate update;
      *update.mutable_job() = BuildSummary();
      {
        absl::MutexLock lock(&mu_);
        published_summary_ = update.job();
      }
      QueueFeed(std::move(update));
      summary_changed_ = false;
      counters_changed_ = false;
      next_summary_flush_ = now + options_.summary_update_interval;
    }
  }
  PublishPending();
  FlushIndex(now, /*force=*/false);

  if (options_.probe_interval > absl::ZeroDuration() && now >= next_probe_ && !force) {
    next_probe_ = now + options_.probe_interval;
    for (auto& [id, connection] : connections_) {
      if (!connection.hello_acked) continue;
      const uint64_t probe_id = next_probe_id_++;
      const int64_t send_ns = NowUnixNs();
      connection.probes_in_flight[probe_id] = send_ns;
      // Unanswered probes are forgotten after a few intervals.
      while (connection.probes_in_flight.size() > 8) {
        connection.probes_in_flight.erase(connection.probes_in_flight.begin());
      }
      v1::Control control;
      control.mutable_probe()->set_probe_id(probe_id);
      control.mutable_probe()->set_collector_send_unix_ns(send_ns);
      connection.stream->Send(std::move(control));
    }
  }
}

// ---------------------------------------------------------------- status

void JobPipeline::Snapshot(std::function<void(v1::JobStatus)> done) {
  Post([this, done = std::move(done)](bool run) mutable {
    if (!run) {
      v1::JobStatus status;
      {
        absl::MutexLock lock(&mu_);
        *status.mutable_summary() = published_summary_;
      }
      return done(std::move(status));
    }
    // After the sync and the publication of this round's updates, so that
    // feed_sequence names exactly what the state includes.
    after_sync_.push_back(
        [this, done = std::move(done)](const absl::Status&) { done(BuildStatus()); });
  });
}

v1::JobSummary JobPipeline::summary() const {
  absl::MutexLock lock(&mu_);
  return published_summary_;
}

v1::JobSummary JobPipeline::BuildSummary() const {
  v1::JobSummary summary;
  summary.set_job_id(job_id_);
  uint32_t connected = 0;
  uint32_t goodbyes = 0;
  for (const auto& [rank, r] : ranks_) {
    connected += r.connected() ? 1 : 0;
    goodbyes += r.said_goodbye() ? 1 : 0;
  }
  v1::JobState state = v1::JOB_STATE_IDLE;
  if (halted_) {
    state = v1::JOB_STATE_HALTED;
  } else if (connected > 0) {
    state = v1::JOB_STATE_RUNNING;
  } else if (!ranks_.empty() && goodbyes == ranks_.size() && vanished_ranks_.empty()) {
    state = v1::JOB_STATE_FINISHED;
  } else if (!vanished_ranks_.empty()) {
    state = v1::JOB_STATE_LOST;
  }
  summary.set_state(state);
  summary.set_world_size(world_size_);
  summary.set_ranks_connected(connected);
  summary.set_ranks_seen(static_cast<uint32_t>(ranks_.size()));
  summary.set_events_received(events_total_);
  summary.set_bytes_received(bytes_total_);
  summary.set_created_unix_ns(created_unix_ns_);
  summary.set_last_event_unix_ns(last_event_unix_ns_);
  bool any_recording = false;
  for (const auto& [id, connection] : connections_) any_recording |= connection.recording;
  summary.set_recording(recording_.value_or(any_recording));
  if (loss_contribution_.has_value()) summary.set_loss_contribution(*loss_contribution_);
  summary.set_events_per_second(events_per_second_);
  if (alerts_) summary.set_open_alerts(static_cast<uint32_t>(alerts_->OpenAlerts().size()));
  return summary;
}

v1::JobStatus JobPipeline::BuildStatus() const {
  v1::JobStatus status;
  *status.mutable_summary() = BuildSummary();
  for (const auto& [rank, r] : ranks_) *status.add_ranks() = r;
  for (const v1::CommandRecord& c : commands_) *status.add_commands() = c;
  status.set_feed_sequence(feed_sequence_);
  *status.mutable_halt_policy() = halt_policy_;
  return status;
}

}  // namespace trainscope::collector
