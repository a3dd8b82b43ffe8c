#include "trainscope/collector/pipeline/job_storage.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::MakeHello;
using testing::ScopedTempDir;

class JobStorageTest : public ::testing::Test {
 protected:
  JobStorageOptions Options() {
    return {.data_dir = dir_.path(),
            .segment_bytes = 1 << 20,
            .fsync = false,
            .use_index = true,
            .notice = [this](absl::string_view line) { notices_.emplace_back(line); }};
  }
  ScopedTempDir dir_;
  std::vector<std::string> notices_;
};

TEST_F(JobStorageTest, ANewJobGetsItsLogTheIndexAndNoTokenYet) {
  absl::StatusOr<JobStorage> storage = OpenJobStorage("job-1", Options(), nullptr);
  ASSERT_TRUE(storage.ok()) << storage.status();
  EXPECT_NE(storage->log, nullptr);
  EXPECT_NE(storage->index, nullptr);
  EXPECT_TRUE(fs::is_directory(dir_.path() / "jobs" / "job-1"));
  EXPECT_TRUE(fs::exists(dir_.path() / "index.sqlite"));
  EXPECT_EQ(storage->token.value, "");
  EXPECT_FALSE(storage->recovery.has_value());  // nothing read, nothing lost
  EXPECT_TRUE(notices_.empty());
}

TEST_F(JobStorageTest, ABadJobIdIsRefusedBeforeItNamesADirectory) {
  for (const std::string bad : {"..", "a/b", ""}) {
    absl::StatusOr<JobStorage> storage = OpenJobStorage(bad, Options(), nullptr);
    EXPECT_EQ(storage.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(fs::exists(dir_.path() / "jobs"));
}

TEST_F(JobStorageTest, WithoutTheIndexOnPurposeNothingIsSaid) {
  JobStorageOptions options = Options();
  options.use_index = false;
  absl::StatusOr<JobStorage> storage = OpenJobStorage("job-1", options, nullptr);
  ASSERT_TRUE(storage.ok()) << storage.status();
  EXPECT_EQ(storage->index, nullptr);
  EXPECT_FALSE(fs::exists(dir_.path() / "index.sqlite"));
  EXPECT_TRUE(notices_.empty());
}

TEST_F(JobStorageTest, AnIndexThatCannotBeOpenedIsSaidAndTheJobRunsWithoutIt) {
  fs::create_directories(dir_.path() / "index.sqlite");  // a directory in its place
  absl::StatusOr<JobStorage> storage = OpenJobStorage("job-1", Options(), nullptr);
  ASSERT_TRUE(storage.ok()) << storage.status();
  EXPECT_EQ(storage->index, nullptr);
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_THAT(notices_[0], HasSubstr("job job-1: running without the index"));
}

TEST_F(JobStorageTest, AReopenedLogIsAuditedAndItsRecoveryShown) {
  {
    absl::StatusOr<JobStorage> first = OpenJobStorage("job-1", Options(), nullptr);
    ASSERT_TRUE(first.ok()) << first.status();
    v1::LogRecord record;
    *record.mutable_stream_opened()->mutable_hello() = MakeHello("job-1", 0, 1, 77);
    ASSERT_TRUE(first->log->Append(record).ok());
    ASSERT_TRUE(first->log->Sync().ok());
  }
  fs::remove(dir_.path() / "index.sqlite");  // lost with its side files: rebuilt
  fs::remove(dir_.path() / "index.sqlite-wal");
  fs::remove(dir_.path() / "index.sqlite-shm");
  RecoveryReport report;
  report.messages.push_back("from the caller");
  absl::StatusOr<JobStorage> again = OpenJobStorage("job-1", Options(), &report);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->recovery.has_value());
  ASSERT_FALSE(report.messages.empty());
  EXPECT_EQ(report.messages[0], "from the caller");
  // The audit brought the new index's rows in line with the log.
  ASSERT_NE(again->index, nullptr);
  absl::StatusOr<std::vector<IndexedStream>> streams = again->index->ListStreams("job-1");
  ASSERT_TRUE(streams.ok()) << streams.status();
  ASSERT_EQ(streams->size(), 1u);
  EXPECT_EQ((*streams)[0].agent_instance_id, 77u);
}

TEST_F(JobStorageTest, ALogTheCallerOpenedIsNotAuditedWithoutAReport) {
  absl::StatusOr<JobStorage> storage = OpenJobStorage("job-1", Options(), nullptr);
  ASSERT_TRUE(storage.ok()) << storage.status();
  absl::StatusOr<JobStorage> over =
      JobStorageOverLog("job-1", Options(), std::move(storage->log), nullptr);
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_NE(over->log, nullptr);
  EXPECT_FALSE(over->recovery.has_value());
}

}  // namespace
}  // namespace trainscope::collector
