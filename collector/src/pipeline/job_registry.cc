#include "trainscope/collector/pipeline/job_registry.h"

#include <cstdio>
#include <chrono>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/ingest/hello_validator.h"
#include "trainscope/collector/store/recovery_audit.h"

namespace trainscope::collector {

JobRegistry::JobRegistry(JobPipelineOptions options, size_t max_jobs)
    : options_(std::move(options)), max_jobs_(max_jobs) {}

JobRegistry::~JobRegistry() { Stop(); }

void JobRegistry::Notice(absl::string_view line) const {
  if (options_.notice) {
    options_.notice(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

absl::Status JobRegistry::RecoverJobs() {
  const std::filesystem::path jobs_dir = options_.data_dir / "jobs";
  std::error_code ec;
  if (!std::filesystem::exists(jobs_dir, ec)) return absl::OkStatus();
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(jobs_dir, ec)) {
    if (entry.is_directory() && IsValidJobId(entry.path().filename().string())) {
      names.push_back(entry.path().filename().string());
    }
  }
  if (ec)
    return absl::UnavailableError(
        absl::StrCat("cannot list ", jobs_dir.string(), ": ", ec.message()));
  std::sort(names.begin(), names.end());
  // A damaged index is set aside before any job opens it, and rebuilt by
  // the jobs' recovery (recovery_audit.h).
  std::string index_note;
  if (options_.use_index && !names.empty()) {
    absl::StatusOr<std::string> checked =
        LogIndex::CheckOrSetAside(options_.data_dir / "index.sqlite");
    if (!checked.ok()) {
      Notice(absl::StrCat("trainscope-collector: ", checked.status().message()));
    } else if (!checked->empty()) {
      index_note = *checked;
      Notice(absl::StrCat("trainscope-collector: ", index_note));
    }
  }
  base::MutexLock lock(&mu_);
  for (const std::string& name : names) {
    if (jobs_.count(name)) continue;
    RecoveryReport report;
    if (!index_note.empty()) {
      report.index_rebuilt = true;
      report.messages.push_back(index_note);
    }
    absl::StatusOr<JobPipeline*> pipeline = CreateLocked(name, &report);
    if (!pipeline.ok()) {
      Notice(absl::StrCat("trainscope-collector: skipping job ", name, ": ",
                          pipeline.status().message()));
      continue;
    }
    std::string lost = DescribeLoss(report.lost);
    if (DescribeLoss(report.lost_ever) != DescribeLoss(report.lost)) {
      absl::StrAppend(&lost, "; since the job began: ", DescribeLoss(report.lost_ever));
    }
    Notice(absl::StrCat("trainscope-collector: recovered job ", name, ": ", report.records,
                        " records in ", report.segments, " segments, ", lost, ", ",
                        report.corrupt_records, " damaged stretches skipped, ",
                        report.torn_bytes_cut, " torn bytes cut"));
    for (const std::string& message : report.messages) {
      Notice(absl::StrCat("trainscope-collector: job ", name, ": ", message));
    }
  }
  return absl::OkStatus();
}

size_t JobRegistry::ApplyRetention(const RetentionPolicy& policy, absl::Time now) {
  if (policy.max_age <= absl::ZeroDuration() && policy.max_bytes == 0) return 0;
  absl::StatusOr<std::vector<StoredJob>> stored = ListStoredJobs(options_.data_dir);
  if (!stored.ok()) {
    Notice(absl::StrCat("trainscope-collector: retention: ", stored.status().message()));
    return 0;
  }
  // The published status shows a rank from the pipeline round that admitted
  // it; one admitted since writes the log, which the check below sees.
  auto connected = [](JobPipeline* pipeline) {
    const v1::JobStatus status = pipeline->Status();
    for (const v1::RankStatus& rank : status.ranks()) {
      if (rank.connected()) return true;
    }
    return false;
  };
  auto live = [this, &connected](const std::string& job_id) {
    JobPipeline* pipeline = nullptr;
    {
      base::MutexLock lock(&mu_);
      auto it = jobs_.find(job_id);
      if (it == jobs_.end()) return false;
      pipeline = it->second.get();
    }
    return connected(pipeline);
  };
  size_t removed = 0;
  for (const StoredJob& job : SelectForRetention(*stored, policy, now, live)) {
    // Under the lock from the check to the removal: a Hello for this job
    // waits, then starts a new job of that name.
    base::MutexLock lock(&mu_);
    // Written since it was picked (a rank attached: the summary may lag): keep it.
    absl::StatusOr<StoredJob> now_stored = StatStoredJob(options_.data_dir, job.job_id);
    if (!now_stored.ok() || now_stored->last_write != job.last_write) continue;
    if (auto it = jobs_.find(job.job_id); it != jobs_.end()) {
      if (connected(it->second.get())) continue;  // came back meanwhile
      it->second->StopAndCloseLog();
      retired_.push_back(std::move(it->second));
      jobs_.erase(it);
    }
    if (absl::Status deleted = DeleteStoredJob(options_.data_dir, job.job_id); !deleted.ok()) {
      Notice(absl::StrCat("trainscope-collector: retention: cannot remove job ", job.job_id, ": ",
                          deleted.message()));
      continue;
    }
    ++removed;
    Notice(absl::StrCat("trainscope-collector: retention: removed job ", job.job_id, " (",
                        job.bytes >> 20, " MiB): ", RetentionReason(job, policy, now)));
  }
  return removed;
}

absl::StatusOr<JobPipeline*> JobRegistry::CreateLocked(const std::string& job_id,
                                                       RecoveryReport* report) {
  if (stopped_) return absl::UnavailableError("the collector is shutting down");
  if (ending_) return *ending_;
  if (jobs_.size() >= max_jobs_) {
    return absl::ResourceExhaustedError(absl::StrCat("this collector already serves ", jobs_.size(),
                                                     " jobs, its limit; job '", job_id,
                                                     "' was not created"));
  }
  absl::StatusOr<std::unique_ptr<JobPipeline>> pipeline =
      JobPipeline::Open(job_id, options_, report);
  if (!pipeline.ok()) return pipeline.status();
  JobPipeline* raw = pipeline->get();
  jobs_.emplace(job_id, std::move(*pipeline));
  if (auto pending = pending_refusals_.find(job_id); pending != pending_refusals_.end()) {
    raw->CountRefusedHellos(pending->second.count, std::move(pending->second.why),
                            std::move(pending->second.from));
    pending_refusals_.erase(pending);
  }
  return raw;
}

void JobRegistry::CountRefusedHello(const std::string& job_id, std::string why, std::string from) {
  base::MutexLock lock(&mu_);
  if (auto it = jobs_.find(job_id); it != jobs_.end()) {
    it->second->CountRefusedHellos(1, std::move(why), std::move(from));
    return;
  }
  auto [it, inserted] = pending_refusals_.try_emplace(job_id);
  if (inserted) {
    it->second.order = next_pending_order_++;
    if (pending_refusals_.size() > kMaxPendingRefusalJobs) {
      // A flood of made-up job ids must not grow this without bound.
      auto oldest = pending_refusals_.begin();
      for (auto p = pending_refusals_.begin(); p != pending_refusals_.end(); ++p) {
        if (p->second.order < oldest->second.order) oldest = p;
      }
      pending_refusals_.erase(oldest);
    }
  }
  ++it->second.count;
  it->second.why = std::move(why);
  it->second.from = std::move(from);
}

absl::StatusOr<JobPipeline*> JobRegistry::GetOrCreate(const std::string& job_id) {
  base::MutexLock lock(&mu_);
  if (auto it = jobs_.find(job_id); it != jobs_.end()) return it->second.get();
  return CreateLocked(job_id, nullptr);
}

absl::StatusOr<JobPipeline*> JobRegistry::Find(absl::string_view job_id) const {
  base::MutexLock lock(&mu_);
  if (auto it = jobs_.find(job_id); it != jobs_.end()) return it->second.get();
  std::vector<std::string> known;
  for (const auto& [name, pipeline] : jobs_) {
    if (known.size() == 5) {
      known.push_back(absl::StrCat("... (", jobs_.size(), " in all)"));
      break;
    }
    known.push_back(name);
  }
  std::string shown(job_id.substr(0, 128));
  return BadInput(absl::StatusCode::kNotFound, "command.job_id",
                  absl::StrCat("unknown job '", shown, "'; known jobs: ",
                               known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
}

std::vector<JobPipeline*> JobRegistry::Jobs() const {
  base::MutexLock lock(&mu_);
  std::vector<JobPipeline*> out;
  for (const auto& [name, pipeline] : jobs_) out.push_back(pipeline.get());
  return out;
}

std::vector<v1::JobSummary> JobRegistry::ListJobs() const {
  std::vector<v1::JobSummary> out;
  for (JobPipeline* pipeline : Jobs()) out.push_back(pipeline->summary());
  return out;
}

void JobRegistry::RunCommand(const std::string& job_id, JobCommand command, absl::string_view who,
                             std::function<void(absl::StatusOr<v1::CommandReply>)> done) {
  absl::StatusOr<JobPipeline*> pipeline = Find(job_id);
  if (!pipeline.ok()) {
    if (options_.counters) options_.counters->Count(pipeline.status(), who);
    return done(pipeline.status());
  }
  (*pipeline)->RunCommand(std::move(command), std::move(done));
}

void JobRegistry::JobStatus(const std::string& job_id, absl::string_view who,
                            std::function<void(absl::StatusOr<v1::JobStatus>)> done) {
  absl::StatusOr<JobPipeline*> pipeline = Find(job_id);
  if (!pipeline.ok()) {
    if (options_.counters) options_.counters->Count(pipeline.status(), who);
    return done(pipeline.status());
  }
  done((*pipeline)->Status());
}

v1::FeedSnapshot JobRegistry::Snapshot(const v1::SnapshotRequest& request,
                                       absl::Duration timeout) const {
  v1::FeedSnapshot snapshot;
  std::vector<JobPipeline*> pipelines;
  if (request.job_id().empty()) {
    pipelines = Jobs();
  } else {
    absl::StatusOr<JobPipeline*> pipeline = Find(request.job_id());
    if (!pipeline.ok()) {
      snapshot.set_error(std::string(pipeline.status().message()));
      return snapshot;
    }
    pipelines.push_back(*pipeline);
  }
  // Steps, Marey and loss data come from the job's analysis thread, asked at once too.
  std::future<v1::FeedSnapshot> analysis;
  if (!request.job_id().empty() &&
      (request.has_steps() || request.has_marey() || request.has_loss())) {
    auto promise = std::make_shared<std::promise<v1::FeedSnapshot>>();
    analysis = promise->get_future();
    pipelines[0]->Query(
        request, [promise](v1::FeedSnapshot reply) { promise->set_value(std::move(reply)); });
  }
  // Alerts come from the pipeline thread.
  std::future<std::vector<v1::Alert>> alerts;
  if (!request.job_id().empty() && request.has_alerts()) {
    auto promise = std::make_shared<std::promise<std::vector<v1::Alert>>>();
    alerts = promise->get_future();
    pipelines[0]->Alerts(request.alerts(), [promise](std::vector<v1::Alert> rows) {
      promise->set_value(std::move(rows));
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  if (alerts.valid()) {
    if (alerts.wait_until(deadline) != std::future_status::ready) {
      snapshot.set_error(absl::StrCat("job ", request.job_id(), ": its alerts did not come within ",
                                      absl::FormatDuration(timeout), "; try again"));
    } else {
      for (v1::Alert& alert : alerts.get()) *snapshot.add_alerts() = std::move(alert);
    }
  }
  if (analysis.valid()) {
    if (analysis.wait_until(deadline) != std::future_status::ready) {
      snapshot.set_error(absl::StrCat("job ", request.job_id(),
                                      ": its analysis did not answer within ",
                                      absl::FormatDuration(timeout), "; try again"));
    } else {
      snapshot.MergeFrom(analysis.get());
    }
  }
  // The statuses as published: no waiting for a pipeline thread.
  for (JobPipeline* pipeline : pipelines) *snapshot.add_jobs() = pipeline->Status();
  return snapshot;
}

void JobRegistry::EndStreams(absl::Status status) {
  std::vector<JobPipeline*> pipelines;
  {
    base::MutexLock lock(&mu_);
    ending_ = status;
    for (const auto& [name, pipeline] : jobs_) pipelines.push_back(pipeline.get());
  }
  for (JobPipeline* pipeline : pipelines) pipeline->EndStreams(status);
}

void JobRegistry::Stop() {
  std::vector<JobPipeline*> pipelines;
  {
    base::MutexLock lock(&mu_);
    stopped_ = true;
    for (const auto& [name, pipeline] : jobs_) pipelines.push_back(pipeline.get());
  }
  for (JobPipeline* pipeline : pipelines) pipeline->Stop();
}

}  // namespace trainscope::collector
