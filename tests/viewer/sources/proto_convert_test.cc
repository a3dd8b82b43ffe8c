#include "trainscope/viewer/proto_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(ProtoConvertTest, AlertPutsItsCauseFirst) {
  trainscope::v1::Alert alert;
  alert.set_job_id("job-a");
  alert.set_rule("collective_wait");
  alert.set_step(57);
  alert.add_ranks(0);
  alert.add_ranks(2);
  alert.add_ranks(3);
  alert.set_cause_rank(2);
  alert.set_metric("wait_ns");
  alert.set_observed(18.6e6);
  alert.set_baseline(5.1e6);
  alert.set_message("ranks 0,3 wait for rank 2 in collectives");
  const Alert out = ConvertAlert(alert);
  EXPECT_EQ(out.job, "job-a");
  EXPECT_EQ(out.rule, "collective_wait");
  EXPECT_EQ(out.step, 57u);
  EXPECT_THAT(out.ranks, ::testing::ElementsAre(2u, 0u, 3u));
  EXPECT_EQ(out.cause, 2);
  EXPECT_EQ(out.metric, "wait_ns");
  EXPECT_DOUBLE_EQ(out.value, 18.6e6);
  EXPECT_DOUBLE_EQ(out.baseline, 5.1e6);
  EXPECT_EQ(out.text, "ranks 0,3 wait for rank 2 in collectives");
}

TEST(ProtoConvertTest, AlertWithoutCauseKeepsItsRanks) {
  trainscope::v1::Alert alert;
  alert.set_cause_rank(-1);
  alert.add_ranks(1);
  alert.set_operator_name("aten::conv2d");
  const Alert out = ConvertAlert(alert);
  EXPECT_THAT(out.ranks, ::testing::ElementsAre(1u));
  EXPECT_EQ(out.cause, -1);
  EXPECT_EQ(out.op, "aten::conv2d");
}

TEST(ProtoConvertTest, JobSummaryKeepsWhetherTheLossSwitchWasEverSent) {
  trainscope::v1::JobSummary summary;
  summary.set_job_id("digits");
  summary.set_recording(true);
  EXPECT_EQ(ConvertJobSummary(summary).loss_contribution, std::nullopt);
  summary.set_loss_contribution(false);
  const JobRecord job = ConvertJobSummary(summary);
  EXPECT_EQ(job.loss_contribution, std::optional<bool>(false));
  EXPECT_TRUE(job.recording);
}

}  // namespace
}  // namespace trainscope::viewer
