// All jobs of a collector: job id -> its JobPipeline.
//
// Usage:
//   JobRegistry registry(pipeline_options);
//   registry.RecoverJobs();                    // reopen every job in <data-dir>/jobs
//   auto pipeline = registry.GetOrCreate(hello.job_id());   // on hello
//   registry.RunCommand("job-1", halt, done);  // commands, counted when bad
//   v1::FeedSnapshot s = registry.Snapshot(request, absl::Seconds(2));
//   registry.Stop();
//
// Pipelines live as long as the registry, so a JobPipeline* handed out stays
// valid until the registry is destroyed (a job removed by retention keeps its
// stopped pipeline object until then).
//
// Threading: thread-safe; one mutex guards the map. Only cold paths take it
// (hello, commands, snapshots, listings), never batches.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_REGISTRY_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/pipeline/job_pipeline.h"
#include "trainscope/collector/store/stored_jobs.h"
#include "trainscope/v1/commands.pb.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

class JobRegistry {
 public:
  // `max_jobs` bounds the pipeline threads a flood of job ids could create.
  explicit JobRegistry(JobPipelineOptions options, size_t max_jobs = 1024);
  ~JobRegistry();  // Stop()

  // Opens every job directory under <data-dir>/jobs (log recovery) and
  // reports what recovery found and repaired through the notice callback.
  // A job that cannot be opened is reported and skipped.
  absl::Status RecoverJobs();

  // The job's pipeline, created (and its log opened) on first use.
  absl::StatusOr<JobPipeline*> GetOrCreate(const std::string& job_id);

  // NOT_FOUND "unknown job 'x'; known jobs: a, b" when there is no such job.
  absl::StatusOr<JobPipeline*> Find(absl::string_view job_id) const;

  // A Hello for `job_id` was refused before reaching the job (no proof of
  // membership): counted in the job's summary (JobSummary.hellos_refused),
  // so the real job's status shows squat and takeover attempts. For a job
  // that does not exist yet (a squatter saying Hello first) the count waits
  // here, without creating the job, until the job is created; at most
  // kMaxPendingRefusalJobs job ids wait, the oldest giving way.
  void CountRefusedHello(const std::string& job_id, std::string why, std::string from);
  static constexpr size_t kMaxPendingRefusalJobs = 256;

  std::vector<JobPipeline*> Jobs() const;
  std::vector<trainscope::v1::JobSummary> ListJobs() const;

  // Finds the job (counting an unknown one as bad input from `who`) and runs
  // the command on its pipeline; `done` may run on the caller's thread.
  void RunCommand(const std::string& job_id, JobCommand command, absl::string_view who,
                  std::function<void(absl::StatusOr<trainscope::v1::CommandReply>)> done);
  // The job's status as its pipeline last published it (JobPipeline::Status);
  // `done` runs on the caller's thread.
  void JobStatus(const std::string& job_id, absl::string_view who,
                 std::function<void(absl::StatusOr<trainscope::v1::JobStatus>)> done);

  // Blocks up to `timeout` for a snapshot of one job (or every job when
  // request.job_id is empty); problems go into FeedSnapshot.error.
  trainscope::v1::FeedSnapshot Snapshot(const trainscope::v1::SnapshotRequest& request,
                                        absl::Duration timeout) const;

  // Ends every agent stream with `status` and refuses new ones (new jobs too):
  // the first step of a shutdown, so that streams do not hold it up.
  void EndStreams(absl::Status status);

  // Stops every pipeline (they drain and sync). Later GetOrCreate fails.
  void Stop();

  // Removes the stored jobs `policy` picks (stored_jobs.h), never one with a
  // rank connected: its pipeline is stopped, its log closed, its files and
  // index rows removed. Says what it removed and why through the notice
  // callback; returns how many jobs were removed.
  size_t ApplyRetention(const RetentionPolicy& policy, absl::Time now);

 private:
  absl::StatusOr<JobPipeline*> CreateLocked(const std::string& job_id, RecoveryReport* report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notice(absl::string_view line) const;

  const JobPipelineOptions options_;
  const size_t max_jobs_;
  mutable base::Mutex mu_;
  std::map<std::string, std::unique_ptr<JobPipeline>, std::less<>> jobs_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> ending_ ABSL_GUARDED_BY(mu_);
  struct PendingRefusals {
    uint64_t count = 0;
    std::string why;
    std::string from;
    uint64_t order = 0;  // when first counted, for eviction
  };
  std::map<std::string, PendingRefusals, std::less<>> pending_refusals_ ABSL_GUARDED_BY(mu_);
  uint64_t next_pending_order_ ABSL_GUARDED_BY(mu_) = 0;
  // Pipelines of jobs retention removed: stopped, kept for the pointers out there.
  std::vector<std::unique_ptr<JobPipeline>> retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_REGISTRY_H_
