#include "trainscope/collector/store/recovery_audit.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "segment_format.h"
#include "store_test_util.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::MakeBatch;
using testing::MakeOpened;
using testing::ReadFile;
using testing::ScopedTempDir;
using testing::WriteFile;

constexpr int kEvents = 30;  // per batch
const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

bool Contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& line : lines) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

class RecoveryAuditTest : public ::testing::Test {
 protected:
  fs::path job_dir() const { return tmp_.path() / "jobs" / "j"; }
  fs::path index_path() const { return tmp_.path() / "index.sqlite"; }
  JobLog::Options LogOptions() const {
    return {.dir = job_dir(), .segment_bytes = 4096, .fsync = false};
  }

  // Writes `batches` batches for ranks 0 and 1 over several segments, and
  // indexes the log as the collector does.
  void WriteJob(int batches) {
    auto log = JobLog::Open(LogOptions(), nullptr);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Append(MakeOpened(0, 10)).ok());
    ASSERT_TRUE((*log)->Append(MakeOpened(1, 11)).ok());
    for (int i = 1; i <= batches; ++i) {
      ASSERT_TRUE((*log)->Append(MakeBatch(0, 10, i, kEvents)).ok());
      ASSERT_TRUE((*log)->Append(MakeBatch(1, 11, i, kEvents)).ok());
    }
    ASSERT_TRUE((*log)->Sync().ok());
    segments_ = (*log)->segments();
    ASSERT_GE(segments_.size(), 3u);
    RecoveryReport report;
    auto index = LogIndex::Open(index_path());
    ASSERT_TRUE(index.ok()) << index.status();
    ASSERT_TRUE(AuditRecovery("j", **log, index->get(), kNow, &report).ok());
    EXPECT_EQ(DescribeLoss(report.lost), "nothing lost");
  }

  // Reopens the log and audits it against the index.
  RecoveryReport Reopen() {
    RecoveryReport report;
    auto log = JobLog::Open(LogOptions(), &report);
    EXPECT_TRUE(log.ok()) << log.status();
    if (!log.ok()) return report;
    auto index = LogIndex::Open(index_path());
    EXPECT_TRUE(index.ok()) << index.status();
    if (!index.ok()) return report;
    const absl::Status audited = AuditRecovery("j", **log, index->get(), kNow, &report);
    EXPECT_TRUE(audited.ok()) << audited;
    return report;
  }

  ScopedTempDir tmp_;
  std::vector<SegmentInfo> segments_;  // as written
};

TEST_F(RecoveryAuditTest, DeletedMiddleSegmentIsReportedWithItsEvents) {
  WriteJob(40);
  const SegmentInfo gone = segments_[1];
  ASSERT_GT(gone.events, 0u);
  fs::remove(gone.path);

  RecoveryReport report = Reopen();
  EXPECT_EQ(report.lost.segments_missing, 1u);
  EXPECT_EQ(report.lost.events, gone.events);
  EXPECT_EQ(report.lost.records, gone.records);
  EXPECT_EQ(report.lost.bytes, gone.bytes);
  EXPECT_EQ(report.lost.events_by_rank[0] + report.lost.events_by_rank[1], gone.events);
  EXPECT_TRUE(Contains(report.messages, gone.path.filename().string())) << report.messages[0];
  EXPECT_NE(DescribeLoss(report.lost).find(absl::StrCat(gone.events, " events")),
            std::string::npos);

  // A second restart: nothing new, and the loss is still known.
  RecoveryReport again = Reopen();
  EXPECT_EQ(DescribeLoss(again.lost), "nothing lost");
  EXPECT_EQ(again.lost_ever.events, gone.events);
  EXPECT_EQ(again.lost_ever.segments_missing, 1u);
  EXPECT_EQ(again.lost_ever.events_by_rank[0] + again.lost_ever.events_by_rank[1], gone.events);
}

TEST_F(RecoveryAuditTest, DeletedLastSegmentIsReported) {
  WriteJob(40);
  const SegmentInfo gone = segments_.back();
  ASSERT_GT(gone.events, 0u);
  fs::remove(gone.path);
  RecoveryReport report = Reopen();
  EXPECT_EQ(report.lost.segments_missing, 1u);
  EXPECT_EQ(report.lost.events, gone.events);
}

TEST_F(RecoveryAuditTest, SegmentsTruncatedToZeroBytesAreReported) {
  WriteJob(40);
  fs::resize_file(segments_[0].path, 0);
  fs::resize_file(segments_.back().path, 0);
  RecoveryReport report = Reopen();
  EXPECT_EQ(report.lost.events, segments_[0].events + segments_.back().events);
  EXPECT_EQ(report.lost.records, segments_[0].records + segments_.back().records);
  EXPECT_EQ(report.lost.segments_missing, 0u) << "the files are there, empty";
  EXPECT_TRUE(Contains(report.messages, "segment emptied"));
  EXPECT_TRUE(Contains(report.messages, "is empty (0 bytes)")) << "seen without the index too";
}

TEST_F(RecoveryAuditTest, TornTailLosesTheRecordsTheIndexKnew) {
  WriteJob(40);
  const SegmentInfo last = segments_.back();
  fs::resize_file(last.path, last.bytes - 10);  // cuts into the last record
  RecoveryReport report = Reopen();
  EXPECT_GT(report.torn_bytes_cut, 0u);
  EXPECT_EQ(report.lost.records, 1u);
  EXPECT_EQ(report.lost.events, static_cast<uint64_t>(kEvents));
}

TEST_F(RecoveryAuditTest, DamagedRecordIsCountedInEvents) {
  WriteJob(40);
  const SegmentInfo& first = segments_[0];
  std::string bytes = ReadFile(first.path);
  // Inside the third record's payload (after the header and two StreamOpened).
  bytes[bytes.size() / 2] ^= 0x5A;
  WriteFile(first.path, bytes);
  RecoveryReport report = Reopen();
  EXPECT_EQ(report.corrupt_records, 1u);
  EXPECT_EQ(report.lost.records, 1u);
  EXPECT_EQ(report.lost.events, static_cast<uint64_t>(kEvents));
}

// A collector killed before it updated the segment rows: the index knows each
// rank's count (updated with every durable batch) but not the last segment.
TEST_F(RecoveryAuditTest, StaleSegmentRowsFallBackOnTheRanksCounts) {
  WriteJob(40);
  {
    auto index = LogIndex::Open(index_path());
    ASSERT_TRUE(index.ok());
    ASSERT_TRUE((*index)->DeleteSegment(segments_.back().path.string()).ok());
  }
  fs::remove(segments_.back().path);
  RecoveryReport report = Reopen();
  EXPECT_EQ(report.lost.events, segments_.back().events);
  EXPECT_EQ(report.lost.records, 0u) << "unknown: the index never had that segment's row";
}

TEST_F(RecoveryAuditTest, ChainGapWithoutTheIndexIsStillReportedOnce) {
  WriteJob(40);
  fs::remove(index_path());
  fs::remove(segments_[1].path);
  RecoveryReport report = Reopen();
  EXPECT_EQ(report.lost.segments_missing, 1u);
  EXPECT_TRUE(Contains(report.messages, "missing from the chain"));
  RecoveryReport again = Reopen();
  EXPECT_EQ(again.lost.segments_missing, 0u);
  EXPECT_EQ(again.lost_ever.segments_missing, 1u);
}

TEST_F(RecoveryAuditTest, MissingIndexIsRebuiltFromTheLog) {
  WriteJob(40);
  fs::remove(index_path());
  RecoveryReport report = Reopen();
  EXPECT_EQ(DescribeLoss(report.lost), "nothing lost");
  auto index = LogIndex::Open(index_path());
  ASSERT_TRUE(index.ok());
  auto segments = (*index)->ListSegments("j");
  ASSERT_TRUE(segments.ok());
  EXPECT_EQ(segments->size(), segments_.size());
  auto streams = (*index)->ListStreams("j");
  ASSERT_TRUE(streams.ok());
  ASSERT_EQ(streams->size(), 2u);
  EXPECT_EQ((*streams)[0].events, 40u * kEvents);
}

TEST(LogIndexCheckTest, DamagedIndexIsSetAsideAndAMissingOneSaid) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  absl::StatusOr<std::string> missing = LogIndex::CheckOrSetAside(path);
  ASSERT_TRUE(missing.ok());
  EXPECT_NE(missing->find("missing"), std::string::npos);

  {
    auto index = LogIndex::Open(path);
    ASSERT_TRUE(index.ok());
    ASSERT_TRUE((*index)->UpsertJob("j", 1, 1).ok());
  }
  absl::StatusOr<std::string> sound = LogIndex::CheckOrSetAside(path);
  ASSERT_TRUE(sound.ok()) << sound.status();
  EXPECT_EQ(*sound, "");

  WriteFile(path, std::string(8192, 'x'));  // not a database any more
  fs::remove(path.string() + "-wal");
  fs::remove(path.string() + "-shm");
  const absl::Status refused = LogIndex::Open(path).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss) << refused;
  EXPECT_NE(refused.message().find("is damaged"), std::string::npos)
      << "not 'cannot switch to WAL journal mode': " << refused;
  absl::StatusOr<std::string> damaged = LogIndex::CheckOrSetAside(path);
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  EXPECT_NE(damaged->find("was damaged"), std::string::npos) << *damaged;
  EXPECT_NE(damaged->find(".damaged-"), std::string::npos) << *damaged;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(LogIndex::Open(path).ok());
}

}  // namespace
}  // namespace trainscope::collector
