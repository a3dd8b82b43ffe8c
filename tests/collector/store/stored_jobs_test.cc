#include "trainscope/collector/store/stored_jobs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store_test_util.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::MakeBatch;
using testing::ScopedTempDir;
using testing::WriteFile;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);
constexpr absl::Duration kDay = absl::Hours(24);

// A job directory with one file of `bytes` bytes, last written `age` ago.
void MakeJob(const fs::path& data_dir, const std::string& job, uint64_t bytes, absl::Duration age) {
  const fs::path dir = data_dir / "jobs" / job;
  fs::create_directories(dir);
  WriteFile(dir / "segment-00000000.tslog", std::string(bytes, 'x'));
  const auto when = fs::file_time_type::clock::now() -
                    std::chrono::seconds(absl::ToInt64Seconds(age + (absl::Now() - kNow)));
  fs::last_write_time(dir / "segment-00000000.tslog", when);
  fs::last_write_time(dir, when);
}

std::vector<std::string> Ids(const std::vector<StoredJob>& jobs) {
  std::vector<std::string> ids;
  for (const StoredJob& job : jobs) ids.push_back(job.job_id);
  return ids;
}

TEST(StoredJobsTest, ListsJobsWithSizeAndLastWrite) {
  ScopedTempDir tmp;
  MakeJob(tmp.path(), "b", 300, 2 * kDay);
  MakeJob(tmp.path(), "a", 100, 40 * kDay);
  fs::create_directories(tmp.path() / "jobs" / "not a job id");
  auto jobs = ListStoredJobs(tmp.path());
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(Ids(*jobs), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*jobs)[0].bytes, 100u);
  EXPECT_NEAR(absl::ToDoubleHours(kNow - (*jobs)[0].last_write), 40 * 24, 1);
  auto none = ListStoredJobs(tmp.path() / "nothing-here");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(StoredJobsTest, RetentionByAgeThenBySizeOldestFirstNeverLive) {
  const std::vector<StoredJob> jobs = {
      {.job_id = "old", .bytes = 10, .last_write = kNow - 40 * kDay},
      {.job_id = "older-live", .bytes = 10, .last_write = kNow - 50 * kDay},
      {.job_id = "mid", .bytes = 50, .last_write = kNow - 10 * kDay},
      {.job_id = "new", .bytes = 50, .last_write = kNow - 1 * kDay},
  };
  auto live = [](const std::string& id) { return id == "older-live"; };
  EXPECT_EQ(Ids(SelectForRetention(jobs, {.max_age = 30 * kDay}, kNow, live)),
            (std::vector<std::string>{"old"}));
  EXPECT_TRUE(SelectForRetention(jobs, {}, kNow, live).empty()) << "no limits: keep everything";
  // 120 bytes in all; a 60-byte cap removes the oldest not live: old, then mid.
  EXPECT_EQ(Ids(SelectForRetention(jobs, {.max_bytes = 60}, kNow, live)),
            (std::vector<std::string>{"old", "mid"}));
  EXPECT_EQ(Ids(SelectForRetention(jobs, {.max_bytes = 1000}, kNow, live)),
            std::vector<std::string>{});
  const StoredJob& old = jobs[0];
  EXPECT_EQ(RetentionReason(old, {.max_age = 30 * kDay}, kNow),
            "last written 40 days ago (over --retain-days=30)");
}

TEST(StoredJobsTest, DeleteRemovesTheDirectoryAndTheIndexRows) {
  ScopedTempDir tmp;
  {
    auto log = JobLog::Open({.dir = tmp.path() / "jobs" / "gone", .fsync = false}, nullptr);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Append(MakeBatch(0, 1, 1, 5)).ok());
    ASSERT_TRUE((*log)->Sync().ok());
    auto index = LogIndex::Open(tmp.path() / "index.sqlite");
    ASSERT_TRUE(index.ok());
    ASSERT_TRUE((*index)->UpsertJob("gone", 1, 1).ok());
    ASSERT_TRUE((*index)->UpsertJob("kept", 1, 1).ok());
  }
  MakeJob(tmp.path(), "kept", 10, kDay);
  ASSERT_TRUE(DeleteStoredJob(tmp.path(), "gone").ok());
  EXPECT_FALSE(fs::exists(tmp.path() / "jobs" / "gone"));
  EXPECT_TRUE(fs::exists(tmp.path() / "jobs" / "kept"));
  EXPECT_FALSE(fs::exists(tmp.path() / ".deleting"));
  auto index = LogIndex::Open(tmp.path() / "index.sqlite");
  ASSERT_TRUE(index.ok());
  auto jobs = (*index)->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job_id, "kept");
}

TEST(StoredJobsTest, DeleteRefusesAJobACollectorHasOpen) {
  ScopedTempDir tmp;
  auto log = JobLog::Open({.dir = tmp.path() / "jobs" / "live", .fsync = false}, nullptr);
  ASSERT_TRUE(log.ok());
  const absl::Status refused = DeleteStoredJob(tmp.path(), "live");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("open by a running trainscope-collector"), std::string::npos)
      << refused;
  EXPECT_TRUE(fs::exists(tmp.path() / "jobs" / "live" / "LOCK"));
  log->reset();
  EXPECT_TRUE(DeleteStoredJob(tmp.path(), "live").ok());
}

TEST(StoredJobsTest, DeleteNamesAMissingOrInvalidJob) {
  ScopedTempDir tmp;
  const absl::Status missing = DeleteStoredJob(tmp.path(), "nope");
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("no job 'nope'"), std::string::npos) << missing;
  EXPECT_EQ(DeleteStoredJob(tmp.path(), "..").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trainscope::collector
