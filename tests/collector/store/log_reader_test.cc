#include "trainscope/collector/store/log_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "segment_format.h"
#include "store_test_util.h"
#include "trainscope/collector/store/job_log.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::AppendToFile;
using testing::MakeBatch;
using testing::ScopedTempDir;
using testing::WriteFile;

// Writes a segment by hand: header plus one frame per batch sequence.
void WriteSegment(const fs::path& path, const std::vector<uint64_t>& sequences) {
  std::string bytes = EncodeSegmentHeader();
  for (uint64_t sequence : sequences) {
    AppendFrame(MakeBatch(0, 1, sequence, 2).SerializeAsString(), &bytes);
  }
  WriteFile(path, bytes);
}

std::vector<uint64_t> Sequences(const LogReader& reader, ReadStats* stats) {
  std::vector<uint64_t> sequences;
  const absl::Status status = reader.ForEach(
      [&](const v1::LogRecord& record) {
        sequences.push_back(record.batch().batch().sequence());
        return true;
      },
      stats);
  EXPECT_TRUE(status.ok()) << status;
  return sequences;
}

TEST(LogReaderTest, MissingOrEmptyDirectoryIsNotFound) {
  ScopedTempDir tmp;
  const fs::path missing = tmp.path() / "missing";
  absl::StatusOr<LogReader> reader = LogReader::Open(missing);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find(missing.string()), std::string::npos);

  WriteFile(tmp.path() / "LOCK", "");
  reader = LogReader::Open(tmp.path());
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find(tmp.path().string()), std::string::npos);
}

TEST(LogReaderTest, ReadsSegmentsInIndexOrderAndIgnoresOtherFiles) {
  ScopedTempDir tmp;
  // Created out of order; index 10 must come after 9 (numeric, not creation order).
  WriteSegment(tmp.path() / SegmentFileName(10), {5, 6});
  WriteSegment(tmp.path() / SegmentFileName(2), {1, 2});
  WriteSegment(tmp.path() / SegmentFileName(9), {3, 4});
  WriteFile(tmp.path() / "LOCK", "");
  WriteFile(tmp.path() / "segment-00000003.tslog.tmp", "junk");

  absl::StatusOr<LogReader> reader = LogReader::Open(tmp.path());
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(reader->segments().size(), 3u);
  EXPECT_EQ(reader->segments()[0].filename(), SegmentFileName(2));
  EXPECT_EQ(reader->segments()[2].filename(), SegmentFileName(10));
  ReadStats stats;
  EXPECT_EQ(Sequences(*reader, &stats), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(stats.segments, 3u);
  EXPECT_EQ(stats.records, 6u);
}

TEST(LogReaderTest, StopsWhenTheCallbackReturnsFalse) {
  ScopedTempDir tmp;
  WriteSegment(tmp.path() / SegmentFileName(0), {1, 2, 3});
  WriteSegment(tmp.path() / SegmentFileName(1), {4, 5});
  absl::StatusOr<LogReader> reader = LogReader::Open(tmp.path());
  ASSERT_TRUE(reader.ok());
  int seen = 0;
  ASSERT_TRUE(reader->ForEach([&](const v1::LogRecord&) { return ++seen < 2; }, nullptr).ok());
  EXPECT_EQ(seen, 2);
}

TEST(LogReaderTest, PartialTailOfTheLastSegmentIsTheEnd) {
  ScopedTempDir tmp;
  const fs::path last = tmp.path() / SegmentFileName(1);
  WriteSegment(tmp.path() / SegmentFileName(0), {1, 2});
  WriteSegment(last, {3});
  std::string frame;
  AppendFrame(MakeBatch(0, 1, 4, 2).SerializeAsString(), &frame);
  AppendToFile(last, frame.substr(0, frame.size() - 7));  // an appender mid-write

  const uintmax_t size_before = fs::file_size(last);
  absl::StatusOr<LogReader> reader = LogReader::Open(tmp.path());
  ASSERT_TRUE(reader.ok());
  ReadStats stats;
  EXPECT_EQ(Sequences(*reader, &stats), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(stats.torn_tail_bytes, frame.size() - 7);
  EXPECT_EQ(stats.corrupt_records, 0u);
  EXPECT_EQ(fs::file_size(last), size_before) << "the reader never modifies the log";
}

TEST(LogReaderTest, ReadsWhileAJobLogIsOpen) {
  ScopedTempDir tmp;
  absl::StatusOr<std::unique_ptr<JobLog>> log =
      JobLog::Open({.dir = tmp.path(), .segment_bytes = 1 << 20, .fsync = false}, nullptr);
  ASSERT_TRUE(log.ok()) << log.status();
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
    ASSERT_TRUE((*log)->Append(MakeBatch(0, 1, sequence, 1)).ok());
  }
  ASSERT_TRUE((*log)->Sync().ok());
  ASSERT_TRUE((*log)->Append(MakeBatch(0, 1, 4, 1)).ok());  // not synced: invisible
  absl::StatusOr<LogReader> reader = LogReader::Open(tmp.path());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(Sequences(*reader, nullptr), (std::vector<uint64_t>{1, 2, 3}));
}

TEST(LogReaderTest, UnsupportedFormatVersionIsAnError) {
  ScopedTempDir tmp;
  const fs::path segment = tmp.path() / SegmentFileName(0);
  std::string header = EncodeSegmentHeader();
  header[8] = 7;
  WriteFile(segment, header);
  absl::StatusOr<LogReader> reader = LogReader::Open(tmp.path());
  ASSERT_TRUE(reader.ok());
  const absl::Status status = reader->ForEach([](const v1::LogRecord&) { return true; }, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find(segment.string()), std::string::npos) << status;
  EXPECT_NE(status.message().find("version 7"), std::string::npos) << status;
}

}  // namespace
}  // namespace trainscope::collector
