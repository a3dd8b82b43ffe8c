#include "trainscope/collector/store/job_log.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "segment_format.h"
#include "store_test_util.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::AppendToFile;
using testing::MakeBatch;
using testing::MakeClosed;
using testing::MakeCommand;
using testing::MakeOpened;
using testing::MakeProbe;
using testing::ReadFile;
using testing::SameRecord;
using testing::ScopedTempDir;
using testing::WriteFile;

JobLog::Options TestOptions(const fs::path& dir) {
  return {.dir = dir, .segment_bytes = 64ull << 20, .fsync = false};
}

std::unique_ptr<JobLog> OpenOrDie(const JobLog::Options& options, RecoveryReport* report) {
  absl::StatusOr<std::unique_ptr<JobLog>> log = JobLog::Open(options, report);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? std::move(*log) : nullptr;
}

std::vector<v1::LogRecord> ReadAll(const fs::path& dir, ReadStats* stats) {
  std::vector<v1::LogRecord> records;
  absl::StatusOr<LogReader> reader = LogReader::Open(dir);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return records;
  const absl::Status status = reader->ForEach(
      [&](const v1::LogRecord& record) {
        records.push_back(record);
        return true;
      },
      stats);
  EXPECT_TRUE(status.ok()) << status;
  return records;
}

void ExpectSameRecords(const std::vector<v1::LogRecord>& got,
                       const std::vector<v1::LogRecord>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(SameRecord(got[i], want[i])) << "record " << i << ": " << got[i].ShortDebugString();
  }
}

// Appends `records`, Syncs, and returns each record's frame offset in the
// (single) segment, assuming the log was empty.
std::vector<uint64_t> AppendAll(JobLog& log, const std::vector<v1::LogRecord>& records) {
  std::vector<uint64_t> offsets;
  uint64_t offset = kSegmentHeaderBytes;
  for (const v1::LogRecord& record : records) {
    offsets.push_back(offset);
    offset += kFrameHeaderBytes + record.ByteSizeLong();
    EXPECT_TRUE(log.Append(record).ok());
  }
  EXPECT_TRUE(log.Sync().ok());
  return offsets;
}

std::vector<v1::LogRecord> Batches(int count) {
  std::vector<v1::LogRecord> records;
  for (int i = 1; i <= count; ++i) records.push_back(MakeBatch(0, 11, i, 5));
  return records;
}

TEST(JobLogTest, EmptyDirectoryGetsFirstSegment) {
  ScopedTempDir tmp;
  const fs::path dir = tmp.path() / "jobs" / "job-1";
  RecoveryReport report;
  auto log = OpenOrDie(TestOptions(dir), &report);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(report.segments, 0u);
  EXPECT_TRUE(fs::exists(dir / "segment-00000000.tslog"));
  EXPECT_EQ(log->bytes_written(), kSegmentHeaderBytes);
  EXPECT_TRUE(log->state().streams.empty());
}

TEST(JobLogTest, RoundTripRebuildsStateAndReadsInOrder) {
  ScopedTempDir tmp;
  std::vector<v1::LogRecord> written;
  for (uint32_t rank = 0; rank < 3; ++rank) written.push_back(MakeOpened(rank, 100 + rank));
  for (uint64_t seq = 1; seq <= 20; ++seq) {
    for (uint32_t rank = 0; rank < 3; ++rank) {
      written.push_back(MakeBatch(rank, 100 + rank, seq, static_cast<int>(rank + seq % 4)));
    }
    if (seq % 5 == 0) written.push_back(MakeProbe(0, seq));
  }
  written.push_back(MakeCommand("disable", 0));
  written.push_back(MakeCommand("halt", 7));
  written.push_back(MakeClosed(0, 100, /*goodbye=*/true));
  written.push_back(MakeClosed(1, 101, /*goodbye=*/false));

  JobLogState live_state;
  uint64_t bytes_on_disk = 0;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    ASSERT_NE(log, nullptr);
    for (size_t i = 0; i < written.size(); ++i) {
      ASSERT_TRUE(log->Append(written[i]).ok());
      if (i % 7 == 0) {
        ASSERT_TRUE(log->Sync().ok());
      }
    }
    ASSERT_TRUE(log->Sync().ok());
    live_state = log->state();
    bytes_on_disk = log->bytes_written();
  }
  uint64_t files = 0;
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    if (entry.path().extension() == ".tslog") files += entry.file_size();
  }
  EXPECT_EQ(bytes_on_disk, files);

  // What Append folded in equals what the records say.
  ASSERT_EQ(live_state.streams.size(), 3u);
  for (uint32_t rank = 0; rank < 3; ++rank) {
    const StreamProgress& progress = live_state.streams.at({rank, 100 + rank});
    EXPECT_EQ(progress.last_sequence, 20u);
    EXPECT_EQ(progress.batches, 20u);
    uint64_t events = 0;
    uint64_t bytes = 0;
    for (uint64_t seq = 1; seq <= 20; ++seq) {
      const v1::LogRecord batch =
          MakeBatch(rank, 100 + rank, seq, static_cast<int>(rank + seq % 4));
      events += batch.batch().batch().kind_size();
      bytes += batch.batch().batch().ByteSizeLong();
    }
    EXPECT_EQ(progress.events, events);
    EXPECT_EQ(progress.bytes, bytes);
    EXPECT_EQ(progress.drops.ring_full(), 20u);
    EXPECT_EQ(progress.hello.host(), "host-" + std::to_string(rank));
    EXPECT_TRUE(progress.hello.job_token().empty()) << "the token must never be kept";
    EXPECT_EQ(progress.goodbye, rank == 0);
  }
  ASSERT_EQ(live_state.commands.size(), 2u);
  EXPECT_EQ(live_state.commands[1].command(), "halt");
  EXPECT_EQ(live_state.commands[1].halt_id(), 7u);

  // Reopen: the state rebuilt from disk is the same.
  RecoveryReport report;
  auto reopened = OpenOrDie(TestOptions(tmp.path()), &report);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(report.records, written.size());
  EXPECT_EQ(report.corrupt_records, 0u);
  EXPECT_EQ(report.torn_bytes_cut, 0u);
  EXPECT_TRUE(report.messages.empty());
  const JobLogState& state = reopened->state();
  ASSERT_EQ(state.streams.size(), live_state.streams.size());
  for (const auto& [key, progress] : live_state.streams) {
    const StreamProgress& got = state.streams.at(key);
    EXPECT_EQ(got.last_sequence, progress.last_sequence);
    EXPECT_EQ(got.batches, progress.batches);
    EXPECT_EQ(got.events, progress.events);
    EXPECT_EQ(got.bytes, progress.bytes);
    EXPECT_EQ(got.goodbye, progress.goodbye);
    EXPECT_EQ(got.drops.SerializeAsString(), progress.drops.SerializeAsString());
    EXPECT_EQ(got.hello.SerializeAsString(), progress.hello.SerializeAsString());
  }
  ASSERT_EQ(state.commands.size(), 2u);
  EXPECT_EQ(state.commands[0].command(), "disable");
  EXPECT_EQ(state.commands[1].command(), "halt");

  ReadStats stats;
  ExpectSameRecords(ReadAll(tmp.path(), &stats), written);
  EXPECT_EQ(stats.corrupt_records, 0u);
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
}

TEST(JobLogTest, AppendsAfterReopenFollowEarlierRecords) {
  ScopedTempDir tmp;
  std::vector<v1::LogRecord> all = Batches(6);
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append(all[i]).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    EXPECT_EQ(log->state().streams.at({0, 11}).last_sequence, 3u);
    for (int i = 3; i < 6; ++i) ASSERT_TRUE(log->Append(all[i]).ok());
    ASSERT_TRUE(log->Sync().ok());
    EXPECT_EQ(log->segments().size(), 1u);
  }
  ExpectSameRecords(ReadAll(tmp.path(), nullptr), all);
}

TEST(JobLogTest, UnsyncedRecordsAreNotOnDisk) {
  ScopedTempDir tmp;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    ASSERT_TRUE(log->Append(MakeBatch(0, 1, 1, 1)).ok());
    ASSERT_TRUE(log->Sync().ok());
    ASSERT_TRUE(log->Append(MakeBatch(0, 1, 2, 1)).ok());
    EXPECT_EQ(log->state().streams.at({0, 1}).last_sequence, 2u);  // state covers it
  }
  auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
  EXPECT_EQ(log->state().streams.at({0, 1}).last_sequence, 1u);
}

class TornTailTest : public ::testing::TestWithParam<int> {};

// Cut the last frame at several points: inside its header and inside its payload.
TEST_P(TornTailTest, CutsExactlyTheTornBytes) {
  ScopedTempDir tmp;
  const std::vector<v1::LogRecord> records = Batches(8);
  const fs::path segment = tmp.path() / "segment-00000000.tslog";
  std::vector<uint64_t> offsets;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    offsets = AppendAll(*log, records);
  }
  const uint64_t last_frame = offsets.back();
  const uint64_t torn_length = static_cast<uint64_t>(GetParam());
  fs::resize_file(segment, last_frame + torn_length);

  RecoveryReport report;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), &report);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(report.torn_bytes_cut, torn_length);
    EXPECT_EQ(report.records, records.size() - 1);
    EXPECT_EQ(report.corrupt_records, 0u);
    ASSERT_EQ(report.messages.size(), 1u);
    EXPECT_NE(report.messages[0].find(segment.string()), std::string::npos) << report.messages[0];
    EXPECT_NE(report.messages[0].find("offset " + std::to_string(last_frame)), std::string::npos)
        << report.messages[0];
    EXPECT_EQ(fs::file_size(segment), last_frame);
    EXPECT_EQ(log->state().streams.at({0, 11}).last_sequence, records.size() - 1);
    // The agent resends the lost batch; it and later ones are readable.
    ASSERT_TRUE(log->Append(records.back()).ok());
    ASSERT_TRUE(log->Append(MakeBatch(0, 11, 9, 2)).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  std::vector<v1::LogRecord> want = records;
  want.push_back(MakeBatch(0, 11, 9, 2));
  ReadStats stats;
  ExpectSameRecords(ReadAll(tmp.path(), &stats), want);
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
  EXPECT_EQ(stats.corrupt_records, 0u);
}

INSTANTIATE_TEST_SUITE_P(CutPoints, TornTailTest, ::testing::Values(1, 4, 6, 11, 12, 13, 40));

TEST(JobLogTest, GarbageHalfHeaderAtTheEndIsCut) {
  ScopedTempDir tmp;
  const std::vector<v1::LogRecord> records = Batches(5);
  const fs::path segment = tmp.path() / "segment-00000000.tslog";
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    AppendAll(*log, records);
  }
  const uint64_t clean_size = fs::file_size(segment);
  // Half a frame header: the magic and two bytes of a length.
  std::string half_header;
  AppendFrame("0123456789", &half_header);
  AppendToFile(segment, half_header.substr(0, 6));

  RecoveryReport report;
  auto log = OpenOrDie(TestOptions(tmp.path()), &report);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(report.torn_bytes_cut, 6u);
  EXPECT_EQ(report.records, records.size());
  EXPECT_EQ(fs::file_size(segment), clean_size);
  ASSERT_TRUE(log->Append(MakeBatch(0, 11, 6, 1)).ok());
  ASSERT_TRUE(log->Sync().ok());
  log.reset();
  EXPECT_EQ(ReadAll(tmp.path(), nullptr).size(), records.size() + 1);
}

TEST(JobLogTest, ZeroFilledTailIsCut) {
  ScopedTempDir tmp;
  const fs::path segment = tmp.path() / "segment-00000000.tslog";
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    AppendAll(*log, Batches(3));
  }
  const uint64_t clean_size = fs::file_size(segment);
  AppendToFile(segment, std::string(4096, '\0'));  // size extended, data never written
  RecoveryReport report;
  auto log = OpenOrDie(TestOptions(tmp.path()), &report);
  EXPECT_EQ(report.torn_bytes_cut, 4096u);
  EXPECT_EQ(report.records, 3u);
  EXPECT_EQ(fs::file_size(segment), clean_size);
}

TEST(JobLogTest, TornSegmentHeaderIsRewritten) {
  ScopedTempDir tmp;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    AppendAll(*log, Batches(2));
  }
  // A crash right after creating the next segment.
  WriteFile(tmp.path() / "segment-00000001.tslog", EncodeSegmentHeader().substr(0, 5));
  RecoveryReport report;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), &report);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(report.torn_bytes_cut, 5u);
    EXPECT_EQ(report.records, 2u);
    ASSERT_TRUE(log->Append(MakeBatch(0, 11, 3, 1)).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  ReadStats stats;
  const auto records = ReadAll(tmp.path(), &stats);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].batch().batch().sequence(), 3u);
  EXPECT_EQ(stats.segments, 2u);
}

TEST(JobLogTest, DamagedHeaderOfTheLastSegmentStartsANewOne) {
  ScopedTempDir tmp;
  const fs::path first = tmp.path() / SegmentFileName(0);
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    AppendAll(*log, Batches(3));
  }
  std::string bytes = ReadFile(first);
  bytes[2] = '?';
  WriteFile(first, bytes);
  RecoveryReport report;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), &report);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(report.records, 3u);
    EXPECT_EQ(report.corrupt_records, 1u);
    ASSERT_EQ(log->segments().size(), 2u);
    EXPECT_TRUE(log->segments()[0].sealed);
    ASSERT_TRUE(log->Append(MakeBatch(0, 11, 4, 1)).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  EXPECT_EQ(ReadFile(first), bytes) << "damage is left in place";
  EXPECT_EQ(ReadAll(tmp.path(), nullptr).size(), 4u);
}

class CorruptMiddleTest : public ::testing::TestWithParam<int> {};

// Record k of M is damaged; the other M-1 survive and the damage is located.
TEST_P(CorruptMiddleTest, FlippedPayloadByteLosesOnlyThatRecord) {
  ScopedTempDir tmp;
  const int k = GetParam();
  const std::vector<v1::LogRecord> records = Batches(10);
  const fs::path segment = tmp.path() / "segment-00000000.tslog";
  std::vector<uint64_t> offsets;
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    offsets = AppendAll(*log, records);
  }
  std::string bytes = ReadFile(segment);
  bytes[offsets[k] + kFrameHeaderBytes + 5] ^= 0x40;
  WriteFile(segment, bytes);

  std::vector<v1::LogRecord> survivors = records;
  survivors.erase(survivors.begin() + k);

  ReadStats stats;
  ExpectSameRecords(ReadAll(tmp.path(), &stats), survivors);
  EXPECT_EQ(stats.corrupt_records, 1u);
  ASSERT_EQ(stats.damage.size(), 1u);
  EXPECT_EQ(stats.damage[0].segment, segment);
  EXPECT_EQ(stats.damage[0].offset, offsets[k]);
  EXPECT_EQ(stats.damage[0].length, offsets[k + 1] - offsets[k]);

  RecoveryReport report;
  auto log = OpenOrDie(TestOptions(tmp.path()), &report);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(report.corrupt_records, 1u);
  EXPECT_EQ(report.records, records.size() - 1);
  EXPECT_EQ(report.torn_bytes_cut, 0u);
  ASSERT_EQ(report.messages.size(), 1u);
  EXPECT_NE(report.messages[0].find(segment.string()), std::string::npos) << report.messages[0];
  EXPECT_NE(report.messages[0].find("offset " + std::to_string(offsets[k])), std::string::npos)
      << report.messages[0];
  ASSERT_EQ(report.damage.size(), 1u);
  EXPECT_EQ(report.damage[0].offset, offsets[k]);
  EXPECT_EQ(fs::file_size(segment), bytes.size()) << "damage is left in place";
  const StreamProgress& progress = log->state().streams.at({0, 11});
  EXPECT_EQ(progress.batches, records.size() - 1);
  EXPECT_EQ(progress.last_sequence, 10u);
}

INSTANTIATE_TEST_SUITE_P(Positions, CorruptMiddleTest, ::testing::Values(0, 4, 8));

TEST(JobLogTest, CorruptLengthFieldResynchronises) {
  // Larger than the file, smaller than the frame, and over the maximum.
  for (uint32_t bad_length : {0x00FFFFFFu, 3u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(bad_length);
    ScopedTempDir tmp;
    const std::vector<v1::LogRecord> records = Batches(6);
    const fs::path segment = tmp.path() / "segment-00000000.tslog";
    std::vector<uint64_t> offsets;
    {
      auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
      offsets = AppendAll(*log, records);
    }
    std::string bytes = ReadFile(segment);
    for (int i = 0; i < 4; ++i)
      bytes[offsets[2] + 4 + i] = static_cast<char>(bad_length >> (8 * i));
    WriteFile(segment, bytes);

    std::vector<v1::LogRecord> survivors = records;
    survivors.erase(survivors.begin() + 2);
    ReadStats stats;
    ExpectSameRecords(ReadAll(tmp.path(), &stats), survivors);
    EXPECT_EQ(stats.corrupt_records, 1u);
    EXPECT_EQ(stats.torn_tail_bytes, 0u);

    RecoveryReport report;
    auto log = OpenOrDie(TestOptions(tmp.path()), &report);
    EXPECT_EQ(report.corrupt_records, 1u);
    EXPECT_EQ(report.torn_bytes_cut, 0u);
    EXPECT_EQ(report.records, records.size() - 1);
  }
}

TEST(JobLogTest, RotatesAcrossSegmentsAndReadsInOrder) {
  ScopedTempDir tmp;
  JobLog::Options options = TestOptions(tmp.path());
  options.segment_bytes = 2048;
  const std::vector<v1::LogRecord> records = Batches(60);
  uint64_t frame_bytes = 0;  // the largest frame
  for (const auto& record : records) {
    frame_bytes = std::max<uint64_t>(frame_bytes, kFrameHeaderBytes + record.ByteSizeLong());
  }
  {
    auto log = OpenOrDie(options, nullptr);
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_TRUE(log->Append(records[i]).ok());
      if (i % 4 == 3) {
        ASSERT_TRUE(log->Sync().ok());
      }
    }
    ASSERT_TRUE(log->Sync().ok());
    const std::vector<SegmentInfo> segments = log->segments();
    ASSERT_GE(segments.size(), 3u);
    uint64_t records_total = 0;
    uint64_t bytes_total = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
      EXPECT_EQ(segments[i].path.filename(), SegmentFileName(i));
      EXPECT_EQ(segments[i].sealed, i + 1 < segments.size());
      EXPECT_EQ(segments[i].bytes, fs::file_size(segments[i].path));
      if (segments[i].sealed) {
        // Rotation happens at the first record boundary at or past the limit.
        EXPECT_GE(segments[i].bytes, options.segment_bytes);
        EXPECT_LT(segments[i].bytes, options.segment_bytes + frame_bytes);
      }
      records_total += segments[i].records;
      bytes_total += segments[i].bytes;
    }
    EXPECT_EQ(records_total, records.size());
    EXPECT_EQ(bytes_total, log->bytes_written());
  }
  ReadStats stats;
  ExpectSameRecords(ReadAll(tmp.path(), &stats), records);
  EXPECT_GE(stats.segments, 3u);

  RecoveryReport report;
  auto log = OpenOrDie(options, &report);
  EXPECT_EQ(report.records, records.size());
  EXPECT_EQ(report.segments, stats.segments);
  EXPECT_EQ(log->state().streams.at({0, 11}).batches, records.size());
}

TEST(JobLogTest, DamageAtTheEndOfASealedSegmentIsCorruptNotTorn) {
  ScopedTempDir tmp;
  JobLog::Options options = TestOptions(tmp.path());
  options.segment_bytes = 1024;
  const std::vector<v1::LogRecord> records = Batches(30);
  {
    auto log = OpenOrDie(options, nullptr);
    for (const auto& record : records) ASSERT_TRUE(log->Append(record).ok());
    ASSERT_TRUE(log->Sync().ok());
  }
  const fs::path first = tmp.path() / SegmentFileName(0);
  const uint64_t first_size = fs::file_size(first);
  fs::resize_file(first, first_size - 3);

  RecoveryReport report;
  auto log = OpenOrDie(options, &report);
  EXPECT_EQ(report.torn_bytes_cut, 0u);
  EXPECT_EQ(report.corrupt_records, 1u);
  EXPECT_EQ(report.records, records.size() - 1);
  EXPECT_EQ(fs::file_size(first), first_size - 3) << "a sealed segment is never cut";
}

TEST(JobLogTest, OpenOnAFileReportsThePath) {
  ScopedTempDir tmp;
  const fs::path file = tmp.path() / "not-a-dir";
  WriteFile(file, "x");
  for (const fs::path& dir : {file, file / "job"}) {
    absl::StatusOr<std::unique_ptr<JobLog>> log = JobLog::Open(TestOptions(dir), nullptr);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.status().message().find(dir.string()), std::string::npos) << log.status();
  }
  EXPECT_FALSE(JobLog::Open(TestOptions(""), nullptr).ok());
}

TEST(JobLogTest, SecondOpenOfTheSameDirectoryFails) {
  ScopedTempDir tmp;
  auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
  absl::StatusOr<std::unique_ptr<JobLog>> second = JobLog::Open(TestOptions(tmp.path()), nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  log.reset();
  EXPECT_TRUE(JobLog::Open(TestOptions(tmp.path()), nullptr).ok());
}

TEST(JobLogTest, RejectsRecordWithoutBodyAndStaysUsable) {
  ScopedTempDir tmp;
  auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
  const absl::Status status = log->Append(v1::LogRecord());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(log->Append(MakeBatch(0, 1, 1, 1)).ok());
  EXPECT_TRUE(log->Sync().ok());
}

TEST(JobLogTest, FailedWriteIsReportedStickyAndLosesNothingSynced) {
  ScopedTempDir tmp;
  const std::vector<v1::LogRecord> records = Batches(4);
  JobLog::Options options = TestOptions(tmp.path());
  options.fsync = true;  // exercise fdatasync too
  auto log = OpenOrDie(options, nullptr);
  AppendAll(*log, records);

  // Cap the file size just past what is on disk: the next write fails with EFBIG.
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit capped = saved;
  capped.rlim_cur = log->bytes_written() + 100;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &capped), 0);
  ASSERT_TRUE(log->Append(MakeBatch(0, 11, 5, 200)).ok());  // buffered: no I/O yet
  const absl::Status failed = log->Sync();
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ::signal(SIGXFSZ, previous_handler);

  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("segment-00000000.tslog"), std::string::npos) << failed;
  EXPECT_EQ(log->Append(MakeBatch(0, 11, 6, 1)).code(), failed.code()) << "failure is sticky";
  EXPECT_EQ(log->Sync().code(), failed.code());
  log.reset();

  RecoveryReport report;
  auto reopened = OpenOrDie(options, &report);
  EXPECT_EQ(report.records, records.size());
  EXPECT_EQ(reopened->state().streams.at({0, 11}).last_sequence, 4u);
  ExpectSameRecords(ReadAll(tmp.path(), nullptr), records);
}

TEST(JobLogTest, FoldLogRecordMatchesAppend) {
  JobLogState state;
  FoldLogRecord(MakeBatch(3, 9, 5, 4), &state);
  FoldLogRecord(MakeBatch(3, 9, 2, 1), &state);  // out of order: last_sequence stays the max
  const StreamProgress& progress = state.streams.at({3, 9});
  EXPECT_EQ(progress.last_sequence, 5u);
  EXPECT_EQ(progress.batches, 2u);
  EXPECT_EQ(progress.events, 5u);
  EXPECT_EQ(progress.hello.rank(), 3u);
  EXPECT_EQ(progress.hello.agent_instance_id(), 9u);
  EXPECT_EQ(progress.drops.ring_full(), 2u) << "latest report wins";
}

TEST(JobLogTest, RefusedBatchConsumesItsSequenceOnly) {
  ScopedTempDir tmp;
  v1::LogRecord refused = MakeBatch(0, 11, 3, 0);
  refused.mutable_batch()->set_refused_reason("batch.kind: expected a known EventKind");
  {
    auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
    ASSERT_TRUE(log->Append(MakeBatch(0, 11, 1, 4)).ok());
    ASSERT_TRUE(log->Append(MakeBatch(0, 11, 2, 4)).ok());
    ASSERT_TRUE(log->Append(refused).ok());
    ASSERT_TRUE(log->Sync().ok());
    const StreamProgress& live = log->state().streams.at({0, 11});
    EXPECT_EQ(live.last_sequence, 3u);
    EXPECT_EQ(live.batches, 2u);
    EXPECT_EQ(live.batches_refused, 1u);
    EXPECT_EQ(live.events, 8u);
  }
  auto log = OpenOrDie(TestOptions(tmp.path()), nullptr);
  const StreamProgress& recovered = log->state().streams.at({0, 11});
  EXPECT_EQ(recovered.last_sequence, 3u);
  EXPECT_EQ(recovered.batches, 2u);
  EXPECT_EQ(recovered.batches_refused, 1u);
  EXPECT_EQ(recovered.events, 8u);
}

}  // namespace
}  // namespace trainscope::collector
