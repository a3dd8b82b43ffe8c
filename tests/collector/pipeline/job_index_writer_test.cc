#include "trainscope/collector/pipeline/job_index_writer.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/scoped_tmpfs.h"
#include "testing/collector_test_util.h"

namespace trainscope::collector {
namespace {

using ::testing::SizeIs;
using testing::MakeHello;
using testing::ScopedTempDir;

class JobIndexWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JobLog::Options options;
    options.dir = dir_.path() / "jobs" / "j";
    options.fsync = false;
    auto log = JobLog::Open(options, nullptr);
    ASSERT_TRUE(log.ok()) << log.status();
    log_ = std::move(*log);
    auto index = LogIndex::Open(dir_.path() / "index.sqlite");
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = index->get();
    writer_ = std::make_unique<JobIndexWriter>(
        "j", std::move(*index), log_.get(),
        [this](absl::string_view line) { notices_.emplace_back(line); });
  }

  ScopedTempDir dir_;
  std::unique_ptr<JobLog> log_;
  LogIndex* index_ = nullptr;  // owned by writer_
  std::unique_ptr<JobIndexWriter> writer_;
  std::vector<std::string> notices_;
};

TEST_F(JobIndexWriterTest, WritesWhatWasMarkedAtMostOnceASecondUnlessForced) {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  EXPECT_EQ(writer_->NextFlush(), absl::InfiniteFuture());  // nothing to write
  v1::LogRecord opened;
  *opened.mutable_stream_opened()->mutable_hello() = MakeHello("j", 0, 2, 10);
  ASSERT_TRUE(log_->Append(opened).ok());
  writer_->MarkJob();
  writer_->MarkStream({0, 10});
  writer_->Flush(t0, /*force=*/false, 5, 2);
  auto jobs = index_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_THAT(*jobs, SizeIs(1));
  EXPECT_THAT(*index_->ListStreams("j"), SizeIs(1));

  v1::StepReport step;
  step.set_step(3);
  v1::DeviceStep* d = step.add_devices();
  d->set_step(3);
  d->set_rank(1);
  d->set_step_time_ns(1000);
  writer_->AddStep(step);
  v1::Alert alert;
  alert.set_job_id("j");
  alert.set_alert_id(1);
  alert.set_rule("straggler");
  writer_->AddAlert(alert);
  EXPECT_EQ(writer_->NextFlush(), t0 + absl::Seconds(1));
  writer_->Flush(t0 + absl::Milliseconds(500), /*force=*/false, 5, 2);  // not due yet
  EXPECT_THAT(*index_->ListDeviceSteps("j", 0, 10), SizeIs(0));
  writer_->Flush(t0 + absl::Milliseconds(500), /*force=*/true, 5, 2);
  const auto steps = index_->ListDeviceSteps("j", 0, 10);
  ASSERT_THAT(*steps, SizeIs(1));
  EXPECT_EQ((*steps)[0].step_time_ns, 1000);
  EXPECT_THAT(*index_->ListAlerts("j", v1::AlertQuery()), SizeIs(1));
  EXPECT_TRUE(notices_.empty());
}

TEST(JobIndexWriterWithoutIndexTest, IsANoOp) {
  JobIndexWriter writer("j", nullptr, nullptr, nullptr);
  writer.MarkJob();
  writer.MarkStream({0, 1});
  EXPECT_FALSE(writer.active());
  EXPECT_EQ(writer.NextFlush(), absl::InfiniteFuture());
  writer.Flush(absl::Now(), /*force=*/true, 0, 0);  // must not touch the null log
}

}  // namespace
}  // namespace trainscope::collector

namespace trainscope::collector {
namespace {

// The index on a disk that fills up: the writer keeps it and what it could
// not write, and catches up once there is space (it used to drop the index
// for the rest of the job).
TEST(JobIndexWriterDiskFullTest, KeepsTheIndexAndCatchesUpWhenSpaceReturns) {
  testing::ScopedTmpfs tmpfs(512 << 10);
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  auto log = JobLog::Open({.dir = tmpfs.path() / "jobs" / "j", .fsync = false}, nullptr);
  ASSERT_TRUE(log.ok()) << log.status();
  auto opened = LogIndex::Open(tmpfs.path() / "index.sqlite");
  ASSERT_TRUE(opened.ok()) << opened.status();
  LogIndex* index = opened->get();
  std::vector<std::string> notices;
  JobIndexWriter writer("j", std::move(*opened), log->get(),
                        [&](absl::string_view line) { notices.emplace_back(line); });
  writer.MarkJob();
  writer.Flush(absl::Now(), /*force=*/true, 1, 1);
  ASSERT_THAT(*index->ListJobs(), SizeIs(1));

  // Fill the disk.
  {
    std::ofstream ballast(tmpfs.path() / "ballast", std::ios::binary);
    const std::string chunk(4096, 'b');
    while (ballast.write(chunk.data(), chunk.size())) {
    }
  }
  constexpr int kSteps = 400;
  for (int s = 1; s <= kSteps; ++s) {
    v1::StepReport step;
    step.set_step(s);
    for (uint32_t rank = 0; rank < 8; ++rank) {
      v1::DeviceStep* d = step.add_devices();
      d->set_step(s);
      d->set_rank(rank);
      d->set_step_time_ns(1'000'000);
    }
    writer.AddStep(step);
  }
  writer.Flush(absl::Now(), /*force=*/true, 1, 1);
  ASSERT_FALSE(notices.empty());
  EXPECT_THAT(notices.back(), ::testing::HasSubstr("deferred until there is space"));
  EXPECT_NE(writer.NextFlush(), absl::InfiniteFuture()) << "still has rows to write";

  std::filesystem::remove(tmpfs.path() / "ballast");
  writer.Flush(absl::Now(), /*force=*/true, 1, 1);
  auto steps = index->ListDeviceSteps("j", 1, kSteps);
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_THAT(*steps, SizeIs(kSteps * 8));
  EXPECT_EQ(writer.NextFlush(), absl::InfiniteFuture());
}

}  // namespace
}  // namespace trainscope::collector
