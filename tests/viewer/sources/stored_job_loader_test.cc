// LoadStoredJob's job state comes from the collector's rule over the log
// (job_state_rule.h), so a job halted live reads "halted" when opened from
// its data dir, not "finished" (issue 23.5).
#include "trainscope/viewer/stored_job_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/v1/log.pb.h"
#include "trainscope/viewer/alerts_model.h"

namespace trainscope::viewer {
namespace {

namespace v1 = trainscope::v1;

// Two ranks that said hello and goodbye, and `commands` (by name) between.
void WriteJob(const std::filesystem::path& data_dir, const std::string& job,
              std::vector<std::string> commands, bool rank1_goodbye = true) {
  collector::JobLog::Options options;
  options.dir = data_dir / "jobs" / job;
  options.fsync = false;
  auto log = collector::JobLog::Open(options, nullptr);
  ASSERT_TRUE(log.ok()) << log.status();
  int64_t now = 1'700'000'000'000'000'000;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    v1::LogRecord record;
    record.set_logged_unix_ns(now += 1000);
    v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
    hello->set_job_id(job);
    hello->set_rank(rank);
    hello->set_world_size(2);
    hello->set_host("node-" + std::to_string(rank));
    if (rank == 1) hello->set_rack("rack-b");  // rank 0's agent names none
    hello->set_agent_instance_id(100 + rank);
    ASSERT_TRUE((*log)->Append(record).ok());
  }
  for (const std::string& name : commands) {
    v1::LogRecord record;
    record.set_logged_unix_ns(now += 1000);
    record.mutable_command()->set_command(name);
    record.mutable_command()->set_ranks_reached(2);
    ASSERT_TRUE((*log)->Append(record).ok());
  }
  for (uint32_t rank = 0; rank < 2; ++rank) {
    v1::LogRecord record;
    record.set_logged_unix_ns(now += 1000);
    v1::StreamClosed* closed = record.mutable_stream_closed();
    closed->set_rank(rank);
    closed->set_agent_instance_id(100 + rank);
    closed->set_goodbye(rank == 0 || rank1_goodbye);
    ASSERT_TRUE((*log)->Append(record).ok());
  }
  ASSERT_TRUE((*log)->Sync().ok());
}

class StoredJobLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("viewer-stored-state-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(StoredJobLoaderTest, TheStateIsTheCollectorsRuleOverTheLog) {
  WriteJob(dir_, "clean", {"enable"});
  WriteJob(dir_, "halted", {"halt"});
  WriteJob(dir_, "lost", {}, /*rank1_goodbye=*/false);
  struct Case {
    const char* job;
    JobStateKind state;
    const char* name;
  };
  for (const Case& c : {Case{"clean", JobStateKind::kFinished, "finished"},
                        Case{"halted", JobStateKind::kHalted, "halted"},
                        Case{"lost", JobStateKind::kLost, "lost"}}) {
    absl::StatusOr<JobData> data = LoadStoredJob(dir_, c.job, {});
    ASSERT_TRUE(data.ok()) << c.job << ": " << data.status();
    EXPECT_EQ(data->job.state, c.state) << c.job;
    EXPECT_STREQ(JobStateName(data->job.state), c.name) << c.job;
  }
}

// Hello.rack reaches the viewer's devices from a stored log (--data-dir);
// a rank that named none stays unknown.
TEST_F(StoredJobLoaderTest, DevicesKeepTheRackTheirAgentSaid) {
  WriteJob(dir_, "racks", {});
  absl::StatusOr<JobData> data = LoadStoredJob(dir_, "racks", {});
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->devices.size(), 2u);
  EXPECT_EQ(data->devices[0].host, "node-0");
  EXPECT_EQ(data->devices[0].rack, "");
  EXPECT_EQ(data->devices[1].host, "node-1");
  EXPECT_EQ(data->devices[1].rack, "rack-b");
  ASSERT_EQ(data->job.ranks.size(), 2u);
  EXPECT_EQ(data->job.ranks[1].rack, "rack-b");
}

// A stored job's cleared alert reads cleared in the alerts list, as it did
// live (the loader once took only the raises, so it stayed "open" forever).
TEST_F(StoredJobLoaderTest, AClearedAlertIsClosedInTheAlertsList) {
  WriteJob(dir_, "alerts", {});
  {
    auto index = collector::LogIndex::Open(dir_ / "index.sqlite");
    ASSERT_TRUE(index.ok()) << index.status();
    v1::Alert raised;
    raised.set_job_id("alerts");
    raised.set_alert_id(7);
    raised.set_rule("straggler");
    raised.set_state(v1::ALERT_STATE_RAISED);
    raised.set_step(31);
    raised.set_raised_unix_ns(1'700'000'000'000'000'000);
    raised.add_ranks(2);
    v1::Alert cleared = raised;
    cleared.set_state(v1::ALERT_STATE_CLEARED);
    cleared.set_step(45);
    v1::Alert open = raised;
    open.set_alert_id(8);
    open.set_rule("collective_wait");
    ASSERT_TRUE((*index)->InsertAlert(raised).ok());
    ASSERT_TRUE((*index)->InsertAlert(cleared).ok());
    ASSERT_TRUE((*index)->InsertAlert(open).ok());
  }
  absl::StatusOr<JobData> data = LoadStoredJob(dir_, "alerts", {});
  ASSERT_TRUE(data.ok()) << data.status();
  AlertsModel alerts;
  for (const Alert& alert : data->alerts) alerts.Add(alert);
  ASSERT_EQ(alerts.size(), 2u);  // one row per raise
  int cleared_rows = 0;
  for (const AlertsModel::Row& r : alerts.Rows()) {
    if (r.rule == "straggler") {
      EXPECT_TRUE(r.cleared);
      ++cleared_rows;
    } else {
      EXPECT_FALSE(r.cleared) << r.rule;
    }
  }
  EXPECT_EQ(cleared_rows, 1);
}

}  // namespace
}  // namespace trainscope::viewer
