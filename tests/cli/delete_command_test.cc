// `trainscope delete` on a data directory: asks for --yes, deletes, refuses a
// job a collector has open and names a missing one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "trainscope/cli/cli.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class DeleteCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trainscope-delete-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto log = collector::JobLog::Open({.dir = dir_ / "jobs" / "old-run", .fsync = false},
                                       nullptr);
    ASSERT_TRUE(log.ok()) << log.status();
    auto index = collector::LogIndex::Open(dir_ / "index.sqlite");
    ASSERT_TRUE(index.ok());
    ASSERT_TRUE((*index)->UpsertJob("old-run", 1, 2).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "delete");
    out_.str("");
    err_.str("");
    CommandContext ctx;
    ctx.out = &out_;
    ctx.err = &err_;
    return RunCli(args, ctx);
  }

  fs::path dir_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(DeleteCommandTest, AsksForYesThenDeletesFilesAndIndexRows) {
  EXPECT_EQ(Run({"old-run", "--data-dir", dir_.string()}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("would delete job old-run ("));
  EXPECT_THAT(err_.str(), HasSubstr("pass --yes to delete it"));
  EXPECT_TRUE(fs::exists(dir_ / "jobs" / "old-run"));

  EXPECT_EQ(Run({"old-run", "--data-dir", dir_.string(), "--yes"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("deleted job old-run"));
  EXPECT_FALSE(fs::exists(dir_ / "jobs" / "old-run"));
  auto index = collector::LogIndex::Open(dir_ / "index.sqlite");
  ASSERT_TRUE(index.ok());
  auto jobs = (*index)->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST_F(DeleteCommandTest, RefusesAJobACollectorHasOpen) {
  auto live = collector::JobLog::Open({.dir = dir_ / "jobs" / "old-run", .fsync = false},
                                      nullptr);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(Run({"old-run", "--data-dir", dir_.string(), "--yes"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("is open by a running trainscope-collector"));
  EXPECT_THAT(err_.str(), HasSubstr("a live job is never deleted"));
  EXPECT_TRUE(fs::exists(dir_ / "jobs" / "old-run" / "LOCK"));
}

TEST_F(DeleteCommandTest, NamesAMissingJobAndABadId) {
  EXPECT_EQ(Run({"nope", "--data-dir", dir_.string(), "--yes"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("no job 'nope'"));
  EXPECT_EQ(Run({"..", "--data-dir", dir_.string(), "--yes"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("not a valid job id"));
}

}  // namespace
}  // namespace trainscope::cli
