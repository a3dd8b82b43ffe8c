#include "trainscope/collector/pipeline/analysis_worker.h"

#include <malloc.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace trainscope::collector {
namespace {

uint64_t EventsOf(const trainscope::v1::LogRecord& record) {
  return record.has_batch() ? static_cast<uint64_t>(record.batch().batch().kind_size()) : 0;
}

}  // namespace

AnalysisWorker::AnalysisWorker(AnalysisWorkerOptions options, JobAnalyzerOptions analyzer_options,
                               JobAnalyzerOutputs outputs)
    : options_(std::move(options)), analyzer_(analyzer_options, std::move(outputs)) {
  thread_ = std::thread([this] { Run(); });
}

AnalysisWorker::~AnalysisWorker() { Stop(); }

void AnalysisWorker::Submit(std::vector<trainscope::v1::LogRecord> records) {
  uint64_t dropped = 0;
  bool first_drop = false;
  {
    base::MutexLock lock(&mu_);
    if (stopping_) return;
    for (trainscope::v1::LogRecord& record : records) {
      const uint64_t events = EventsOf(record);
      // Stream and probe records are tiny and keep the analysis's view of
      // the job right; only event batches are skipped under pressure.
      if (events > 0 && queued_events_ + events > options_.max_queued_events) {
        dropped += events;
        first_drop = first_drop || !dropping_;
        dropping_ = true;
        continue;
      }
      queued_events_ += events;
      records_.push_back(std::move(record));
    }
    if (dropped == 0) dropping_ = false;
    if (!records_.empty()) work_.Signal();
  }
  if (dropped > 0) {
    dropped_events_.fetch_add(dropped, std::memory_order_relaxed);
    if (first_drop && options_.notice) {
      options_.notice(absl::StrCat("trainscope-collector: analysis is ", options_.max_queued_events,
                                   " events behind ingest; skipping batches until it catches up "
                                   "(the log keeps every event)"));
    }
  }
}

void AnalysisWorker::Query(trainscope::v1::SnapshotRequest request,
                           std::function<void(trainscope::v1::FeedSnapshot)> done) {
  {
    base::MutexLock lock(&mu_);
    if (!stopping_) {
      tasks_.push_back([this, request = std::move(request), done = std::move(done)] {
        done(analyzer_.Answer(request));
      });
      work_.Signal();
      return;
    }
  }
  trainscope::v1::FeedSnapshot reply;
  reply.set_error("the job's analysis has stopped");
  done(std::move(reply));
}

void AnalysisWorker::Release() {
  {
    base::MutexLock lock(&mu_);
    if (!stopping_) {
      tasks_.push_back([this] {
        analyzer_.Release();
        // The store's blocks were large and many; without a trim glibc keeps
        // them for the process, and RSS would not come down.
        malloc_trim(0);
      });
      work_.Signal();
      return;
    }
  }
  base::MutexLock stop_lock(&stop_mu_);
  if (thread_.joinable()) thread_.join();  // Stop's own join, if it has not run yet
  analyzer_.Release();
  malloc_trim(0);
  const JobAnalyzerStats stats = analyzer_.stats();
  base::MutexLock lock(&mu_);
  stats_ = stats;
}

void AnalysisWorker::SetJobFinished(bool finished) {
  {
    base::MutexLock lock(&mu_);
    const bool release = finished && !released_for_finish_;
    released_for_finish_ = finished;
    if (!release) return;
  }
  Release();
}

JobAnalyzerStats AnalysisWorker::stats() const {
  base::MutexLock lock(&mu_);
  return stats_;
}

void AnalysisWorker::Stop() {
  base::MutexLock stop_lock(&stop_mu_);
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    work_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void AnalysisWorker::Run() {
  absl::Time next_tick = absl::Now() + options_.tick_interval;
  while (true) {
    std::deque<trainscope::v1::LogRecord> records;
    std::deque<Task> tasks;
    bool stopping = false;
    {
      base::MutexLock lock(&mu_);
      while (!HasWork()) {
        if (work_.WaitWithDeadline(&mu_, next_tick)) break;  // a tick is due
      }
      records.swap(records_);
      queued_events_ = 0;
      tasks.swap(tasks_);
      stopping = stopping_;
    }
    for (const trainscope::v1::LogRecord& record : records) analyzer_.OnLogRecord(record);
    // Queries see everything submitted before them.
    for (Task& task : tasks) task();
    const absl::Time now = absl::Now();
    if (now >= next_tick) {
      analyzer_.Tick(absl::ToUnixNanos(now));
      next_tick = now + options_.tick_interval;
    }
    const JobAnalyzerStats stats = analyzer_.stats();
    {
      base::MutexLock lock(&mu_);
      stats_ = stats;
    }
    if (stopping) break;
  }
}

}  // namespace trainscope::collector
