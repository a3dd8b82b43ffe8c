// Runs one job's JobAnalyzer on a thread of its own, so that alignment and
// step assembly never slow the job's pipeline thread (which owns the log and
// acknowledges batches).
//
// Usage (from the pipeline thread):
//   AnalysisWorker worker(options, analyzer_options, outputs);
//   worker.Submit(std::move(durable_records));   // after the group commit
//   worker.Query(request, [](v1::FeedSnapshot partial) {...});
//   worker.Release();   // the job finished: free its operators (JobAnalyzer::Release)
//   worker.Stop();
//
// Input is bounded by `max_queued_events`: when the analysis falls that far
// behind, whole batches are skipped (counted in dropped_events(), reported to
// the notice callback once per burst) so that ingest never waits for
// analysis. Outputs and query replies run on the worker thread and must not
// block.
//
// Threading: Submit, Query, Release, Stop, stats and dropped_events are
// thread-safe.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_ANALYSIS_WORKER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_ANALYSIS_WORKER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

struct AnalysisWorkerOptions {
  uint64_t max_queued_events = 4'000'000;
  absl::Duration tick_interval = absl::Milliseconds(200);
  std::function<void(absl::string_view)> notice;  // null: quiet
};

class AnalysisWorker {
 public:
  AnalysisWorker(AnalysisWorkerOptions options, JobAnalyzerOptions analyzer_options,
                 JobAnalyzerOutputs outputs);
  ~AnalysisWorker();  // Stop()

  AnalysisWorker(const AnalysisWorker&) = delete;
  AnalysisWorker& operator=(const AnalysisWorker&) = delete;

  // Durable log records, in log order.
  void Submit(std::vector<trainscope::v1::LogRecord> records);
  // Answers request.steps and request.marey (with the current clocks) into a
  // FeedSnapshot holding only those fields.
  void Query(trainscope::v1::SnapshotRequest request,
             std::function<void(trainscope::v1::FeedSnapshot)> done);
  // Drains what is queued, then joins. Idempotent.
  void Stop();
  // After what is queued: JobAnalyzer::Release, then the freed pages go back
  // to the system. On a stopped worker it runs on the caller's thread (the
  // worker thread is gone and queries no longer reach the analyzer).
  void Release();
  // The job's state as its pipeline last saw it: the first call with
  // `finished` after one without (or after construction) calls Release, so a
  // job that ends, comes back and ends again is released each time.
  void SetJobFinished(bool finished);

  // The analyzer's counters as of the end of its last round of work.
  JobAnalyzerStats stats() const;
  uint64_t dropped_events() const { return dropped_events_.load(std::memory_order_relaxed); }

 private:
  using Task = std::function<void()>;
  void Run();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !records_.empty() || !tasks_.empty() || stopping_;
  }

  const AnalysisWorkerOptions options_;
  JobAnalyzer analyzer_;  // worker thread only

  mutable base::Mutex mu_;
  std::deque<trainscope::v1::LogRecord> records_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_events_ ABSL_GUARDED_BY(mu_) = 0;
  bool dropping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  JobAnalyzerStats stats_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> dropped_events_{0};
  bool released_for_finish_ ABSL_GUARDED_BY(mu_) = false;
  base::CondVar work_;  // signalled when HasWork() may have become true
  base::Mutex stop_mu_;
  std::thread thread_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_ANALYSIS_WORKER_H_
