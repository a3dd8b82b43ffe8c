// The JobPipeline tests' fixture: a pipeline over a temp data dir (or an
// in-memory FakeJobLog), with helpers that attach ranks, run commands and take
// snapshots synchronously. Shared by job_pipeline_test.cc (ingest, feed,
// analysis) and job_pipeline_commands_test.cc (halt, recording, switches).
#ifndef TESTS_COLLECTOR_TESTING_JOB_PIPELINE_FIXTURE_H_
#define TESTS_COLLECTOR_TESTING_JOB_PIPELINE_FIXTURE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/base/mutex.h"
#include "trainscope/base/notification.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector::testing {

// An in-memory JobLog whose Sync can be made to fail; it records the order of
// appends and syncs so that tests can check what was durable when.
class FakeJobLog : public JobLog {
 public:
  absl::Status Append(const v1::LogRecord& record) override {
    base::MutexLock lock(&mu_);
    records_.push_back(record);
    FoldLogRecord(record, &state_);
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    base::MutexLock lock(&mu_);
    ++syncs_;
    if (fail_sync_) return absl::DataLossError("disk on fire");
    synced_ = records_.size();
    return absl::OkStatus();
  }
  const JobLogState& state() const override { return state_; }  // pipeline thread only
  uint64_t bytes_written() const override { return 0; }
  std::vector<SegmentInfo> segments() const override { return {}; }

  void set_fail_sync(bool fail) {
    base::MutexLock lock(&mu_);
    fail_sync_ = fail;
  }
  int syncs() const {
    base::MutexLock lock(&mu_);
    return syncs_;
  }
  // Whether the batch with `sequence` was appended before the last good sync.
  bool BatchSynced(uint64_t sequence) const {
    base::MutexLock lock(&mu_);
    for (size_t i = 0; i < synced_; ++i) {
      if (records_[i].has_batch() && records_[i].batch().batch().sequence() == sequence)
        return true;
    }
    return false;
  }
  std::vector<v1::LogRecord> records() const {
    base::MutexLock lock(&mu_);
    return records_;
  }

 private:
  mutable base::Mutex mu_;
  std::vector<v1::LogRecord> records_ ABSL_GUARDED_BY(mu_);
  size_t synced_ ABSL_GUARDED_BY(mu_) = 0;
  int syncs_ ABSL_GUARDED_BY(mu_) = 0;
  bool fail_sync_ ABSL_GUARDED_BY(mu_) = false;
  JobLogState state_;  // the pipeline thread's alone (Append and state())
};

class JobPipelineTest : public ::testing::Test {
 protected:
  JobPipelineOptions Options() {
    JobPipelineOptions options;
    options.data_dir = dir_.path();
    options.fsync = false;
    options.use_index = false;
    options.probe_interval = absl::ZeroDuration();
    options.feed = &feed_;
    options.counters = &counters_;
    options.notice = [](absl::string_view) {};
    return options;
  }

  std::unique_ptr<JobPipeline> OpenFake(JobPipelineOptions options) {
    auto log = std::make_unique<FakeJobLog>();
    fake_log_ = log.get();
    auto pipeline = JobPipeline::OpenWithLog("j", std::move(options), std::move(log));
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    return std::move(*pipeline);
  }

  absl::StatusOr<AttachResult> Attach(JobPipeline& pipeline, v1::Hello hello,
                                      std::shared_ptr<FakeAgentStream> stream) {
    base::Notification done;
    absl::StatusOr<AttachResult> result;
    EXPECT_TRUE(pipeline
                    .Attach({std::move(hello), std::move(stream), "peer"},
                            [&](absl::StatusOr<AttachResult> r) {
                              result = std::move(r);
                              done.Notify();
                            })
                    .ok());
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return result;
  }

  v1::StreamBatch Batch(uint64_t sequence, uint32_t rank = 0, uint64_t instance = 11) {
    v1::StreamBatch batch;
    batch.set_rank(rank);
    batch.set_agent_instance_id(instance);
    *batch.mutable_batch() = MakeBatch(sequence);
    return batch;
  }

  absl::StatusOr<v1::CommandReply> Run(JobPipeline& pipeline, JobCommand command) {
    base::Notification done;
    absl::StatusOr<v1::CommandReply> reply;
    pipeline.RunCommand(std::move(command), [&](absl::StatusOr<v1::CommandReply> r) {
      reply = std::move(r);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return reply;
  }

  v1::JobStatus Snapshot(JobPipeline& pipeline) {
    base::Notification done;
    v1::JobStatus status;
    pipeline.Snapshot([&](v1::JobStatus s) {
      status = std::move(s);
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return status;
  }

  ScopedTempDir dir_;
  RecordingFeedSink feed_;
  BadInputCounters counters_{absl::Seconds(10), nullptr, [](absl::string_view) {}};
  FakeJobLog* fake_log_ = nullptr;
};

}  // namespace trainscope::collector::testing

#endif  // TESTS_COLLECTOR_TESTING_JOB_PIPELINE_FIXTURE_H_
