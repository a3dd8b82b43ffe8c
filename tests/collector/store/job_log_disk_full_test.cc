// JobLog on a disk that fills up and then has space again (a real tmpfs).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "scoped_tmpfs.h"
#include "store_test_util.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::MakeBatch;
using testing::MakeOpened;
using testing::SameRecord;
using testing::ScopedTmpfs;

constexpr uint64_t kTmpfsBytes = 256 << 10;

struct Acknowledged {
  std::vector<v1::LogRecord> records;  // what a Sync made durable, in order
  uint64_t events = 0;
};

class JobLogDiskFullTest : public ::testing::TestWithParam<uint64_t /*segment_bytes*/> {};

// Fills the disk, frees a ballast file, goes on: the log takes appends again
// without a reopen, and what it reports (state, disk) is exactly what was
// acknowledged.
TEST_P(JobLogDiskFullTest, RefusesWhileFullAndTakesAppendsWhenSpaceReturns) {
  ScopedTmpfs tmpfs(kTmpfsBytes);
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  const fs::path ballast = tmpfs.path() / "ballast";
  testing::WriteFile(ballast, std::string(64 << 10, 'b'));
  ASSERT_EQ(fs::file_size(ballast), 64u << 10);

  const JobLog::Options options{
      .dir = tmpfs.path() / "job", .segment_bytes = GetParam(), .fsync = true};
  auto opened = JobLog::Open(options, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.status();
  JobLog& log = **opened;
  Acknowledged acked;
  auto append_round = [&](uint64_t first_sequence, int batches) -> absl::Status {
    std::vector<v1::LogRecord> round;
    absl::Status append_status;
    for (int i = 0; i < batches; ++i) {
      v1::LogRecord record = MakeBatch(0, 7, first_sequence + i, 40);
      absl::Status appended = log.Append(record);
      if (appended.ok()) round.push_back(std::move(record));
      else if (append_status.ok()) append_status = appended;
    }
    absl::Status synced = log.Sync();
    if (synced.ok()) {
      for (v1::LogRecord& record : round) {
        acked.events += static_cast<uint64_t>(record.batch().batch().kind_size());
        acked.records.push_back(std::move(record));
      }
    }
    return synced.ok() ? append_status : synced;
  };

  ASSERT_TRUE(log.Append(MakeOpened(0, 7)).ok());
  ASSERT_TRUE(log.Sync().ok());
  acked.records.push_back(MakeOpened(0, 7));
  uint64_t sequence = 1;
  absl::Status full;
  for (int round = 0; round < 10'000 && full.ok(); ++round, sequence += 4) {
    full = append_round(sequence, 4);
  }
  ASSERT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("No space left on device"), std::string::npos) << full;
  EXPECT_NE(full.message().find("takes appends again"), std::string::npos) << full;

  // Nothing unwritten is counted: state() holds what was acknowledged.
  EXPECT_EQ(log.state().streams.at({0, 7}).events, acked.events);
  uint64_t segment_events = 0;
  for (const SegmentInfo& segment : log.segments()) segment_events += segment.events;
  EXPECT_EQ(segment_events, acked.events);

  // Still full: refused again, not wedged into a sticky error.
  EXPECT_EQ(append_round(sequence, 4).code(), absl::StatusCode::kResourceExhausted);
  sequence += 4;

  fs::remove(ballast);  // space comes back
  const uint64_t events_before = acked.events;
  for (int round = 0; round < 3; ++round, sequence += 4) {
    ASSERT_TRUE(append_round(sequence, 4).ok()) << "round " << round;
  }
  EXPECT_EQ(acked.events, events_before + 3 * 4 * 40);
  EXPECT_EQ(log.state().streams.at({0, 7}).events, acked.events);
  opened->reset();

  // On disk: exactly the acknowledged records, in order, no damage.
  auto reader = LogReader::Open(options.dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<v1::LogRecord> on_disk;
  ReadStats stats;
  ASSERT_TRUE(reader
                  ->ForEach(
                      [&](const v1::LogRecord& record) {
                        on_disk.push_back(record);
                        return true;
                      },
                      &stats)
                  .ok());
  EXPECT_EQ(stats.corrupt_records, 0u);
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
  ASSERT_EQ(on_disk.size(), acked.records.size());
  for (size_t i = 0; i < on_disk.size(); ++i) {
    EXPECT_TRUE(SameRecord(on_disk[i], acked.records[i])) << "record " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(SegmentSizes, JobLogDiskFullTest,
                         ::testing::Values(1ull << 20,  // no rotation: the write fails
                                           8ull << 10   // rotations: creating a segment fails too
                                           ));

}  // namespace
}  // namespace trainscope::collector
