// A job whose disk fills up and then has space again, on a real tmpfs: no
// restart needed, nothing unwritten counted or acknowledged, the refusals
// counted per rank.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/scoped_tmpfs.h"
#include "testing/collector_test_util.h"
#include "testing/job_pipeline_fixture.h"
#include "trainscope/base/notification.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::JobPipelineTest;
using testing::kWait;
using testing::MakeBatch;
using testing::MakeHello;
using testing::ScopedTmpfs;

constexpr int kEventsPerBatch = 200;

class JobPipelineDiskFullTest : public JobPipelineTest {
 protected:
  absl::Status AppendOne(JobPipeline& pipeline, uint64_t connection_id, uint64_t sequence) {
    v1::StreamBatch batch;
    batch.set_rank(0);
    batch.set_agent_instance_id(11);
    *batch.mutable_batch() = MakeBatch(sequence, kEventsPerBatch);
    const uint64_t bytes = batch.batch().ByteSizeLong();
    base::Notification done;
    absl::Status durable;
    EXPECT_TRUE(pipeline
                    .AppendBatch(connection_id, std::move(batch), bytes,
                                 [&](absl::Status s) {
                                   durable = s;
                                   done.Notify();
                                 })
                    .ok());
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return durable;
  }
};

TEST_F(JobPipelineDiskFullTest, GoesOnWhenSpaceReturnsAndCountsOnlyWhatWasStored) {
  ScopedTmpfs tmpfs(256 << 10);
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  const fs::path ballast = tmpfs.path() / "ballast";
  std::ofstream(ballast, std::ios::binary) << std::string(64 << 10, 'b');
  ASSERT_EQ(fs::file_size(ballast), 64u << 10);

  JobPipelineOptions options = Options();
  options.data_dir = tmpfs.path() / "data";
  options.fsync = true;
  options.segment_bytes = 32 << 10;  // rotations hit the full disk too
  auto opened = JobPipeline::Open("j", options, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.status();
  JobPipeline& pipeline = **opened;

  auto stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> attached =
      Attach(pipeline, MakeHello("j", 0, 1, 11, "disk-test-token"), stream);
  ASSERT_TRUE(attached.ok()) << attached.status();
  uint64_t acked_events = 0;
  uint64_t sequence = 1;
  absl::Status full;
  for (; sequence < 10'000; ++sequence) {
    full = AppendOne(pipeline, attached->connection_id, sequence);
    if (!full.ok()) break;
    acked_events += kEventsPerBatch;
  }
  ASSERT_FALSE(full.ok()) << "the tmpfs never filled up";
  EXPECT_THAT(std::string(full.message()), HasSubstr("No space left on device"));
  ASSERT_GT(acked_events, 0u);

  v1::JobStatus status = Snapshot(pipeline);
  ASSERT_EQ(status.ranks_size(), 1);
  EXPECT_EQ(status.ranks(0).events_received(), acked_events) << "unwritten events never count";
  EXPECT_EQ(status.summary().events_received(), acked_events);
  EXPECT_EQ(status.ranks(0).store_refused_batches(), 1u);
  EXPECT_EQ(status.ranks(0).store_refused_events(), static_cast<uint64_t>(kEventsPerBatch));

  // Still full: the next batch is refused too, and counted.
  EXPECT_FALSE(AppendOne(pipeline, attached->connection_id, sequence + 1).ok());
  status = Snapshot(pipeline);
  EXPECT_EQ(status.ranks(0).store_refused_batches(), 2u);
  EXPECT_EQ(status.ranks(0).events_received(), acked_events);

  fs::remove(ballast);  // space comes back
  auto again = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachResult> reattached =
      Attach(pipeline, MakeHello("j", 0, 1, 11, "disk-test-token"), again);
  ASSERT_TRUE(reattached.ok()) << reattached.status();
  EXPECT_EQ(reattached->resume_after_sequence, sequence - 1)
      << "the agent resends from the last durable batch";
  for (uint64_t s = sequence; s < sequence + 3; ++s) {
    ASSERT_TRUE(AppendOne(pipeline, reattached->connection_id, s).ok()) << "batch " << s;
    acked_events += kEventsPerBatch;
  }
  status = Snapshot(pipeline);
  EXPECT_EQ(status.ranks(0).events_received(), acked_events);
  EXPECT_EQ(status.ranks(0).store_refused_events(), 2u * kEventsPerBatch);
  opened->reset();

  // A restarted collector finds exactly the acknowledged events.
  options.data_dir = tmpfs.path() / "data";
  auto reopened = JobPipeline::Open("j", options, nullptr);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  status = Snapshot(**reopened);
  ASSERT_EQ(status.ranks_size(), 1);
  EXPECT_EQ(status.ranks(0).events_received(), acked_events);
}

}  // namespace
}  // namespace trainscope::collector
