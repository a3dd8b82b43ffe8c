#include "trainscope/viewer/jobs_model.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(JobsModelTest, RowsShowStateRanksAndStepRate) {
  JobsModel jobs;
  JobRecord job;
  job.job_id = "job-1";
  job.state = JobStateKind::kRunning;
  job.world_size = 4;
  job.ranks_connected = 3;
  job.recording = true;
  job.ranks = {{0, "node-0", 11, true, 5}, {1, "node-0", 12, false, 7}};
  jobs.Update(job);
  // Steps every 250 ms: 4 steps per second.
  for (uint64_t step = 1; step <= 9; ++step) jobs.OnStep("job-1", step, step * 250'000'000);
  auto rows = jobs.Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, "running");
  EXPECT_EQ(rows[0].ranks, "3/4 connected");
  ASSERT_TRUE(rows[0].steps_per_second.has_value());
  EXPECT_NEAR(*rows[0].steps_per_second, 4.0, 1e-9);
  EXPECT_EQ(rows[0].newest_step, 9u);
  ASSERT_EQ(rows[0].rank_rows.size(), 2u);
  EXPECT_FALSE(rows[0].rank_rows[1].connected);
}

TEST(JobsModelTest, AStaleFeedNoLongerShowsTheJobRunning) {
  JobsModel jobs;
  JobRecord job;
  job.job_id = "job-1";
  job.state = JobStateKind::kRunning;
  job.world_size = 4;
  job.ranks_connected = 4;
  jobs.Update(job);
  for (uint64_t step = 1; step <= 9; ++step) jobs.OnStep("job-1", step, step * 250'000'000);
  const uint64_t version = jobs.version();
  jobs.SetStale("12 s ago");
  EXPECT_GT(jobs.version(), version);
  auto rows = jobs.Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].stale);
  EXPECT_EQ(rows[0].state, "last seen running 12 s ago");
  EXPECT_EQ(rows[0].ranks, "last seen 4/4 connected");
  EXPECT_FALSE(rows[0].steps_per_second.has_value());  // no rate for a feed that is gone
  jobs.SetStale(std::nullopt);  // live again
  rows = jobs.Rows();
  EXPECT_FALSE(rows[0].stale);
  EXPECT_EQ(rows[0].state, "running");
  EXPECT_TRUE(rows[0].steps_per_second.has_value());
}

TEST(JobsModelTest, NoRateFromOneStep) {
  JobsModel jobs;
  jobs.OnStep("job-2", 1, 100);
  auto rows = jobs.Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].steps_per_second.has_value());
}

TEST(JobsModelTest, RateWindowIsBounded) {
  JobsModel jobs;
  // Slow at first (1/s), then fast (10/s): the window sees only the fast steps.
  uint64_t step = 0;
  int64_t t = 0;
  for (int i = 0; i < 30; ++i) jobs.OnStep("j", ++step, t += 1'000'000'000);
  for (int i = 0; i < 30; ++i) jobs.OnStep("j", ++step, t += 100'000'000);
  EXPECT_NEAR(*jobs.Rows()[0].steps_per_second, 10.0, 1e-6);
}

TEST(JobsModelTest, AnEndedJobHasNoStepRate) {
  for (const JobStateKind state :
       {JobStateKind::kFinished, JobStateKind::kHalted, JobStateKind::kLost}) {
    JobsModel jobs;
    JobRecord job;
    job.job_id = "job-1";
    job.state = JobStateKind::kRunning;
    jobs.Update(job);
    for (uint64_t step = 1; step <= 9; ++step) jobs.OnStep("job-1", step, step * 250'000'000);
    ASSERT_TRUE(jobs.Rows()[0].steps_per_second.has_value());
    job.state = state;
    jobs.Update(job);
    EXPECT_FALSE(jobs.Rows()[0].steps_per_second.has_value()) << JobStateName(state);
    EXPECT_EQ(jobs.Rows()[0].newest_step, 9u);  // still says how far it got
  }
}

}  // namespace
}  // namespace trainscope::viewer
