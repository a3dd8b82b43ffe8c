#include "trainscope/viewer/synthetic_job.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(SyntheticJobTest, DeterministicWithAStragglerAndItsAlert) {
  SyntheticJobOptions options;
  options.devices = 6;
  options.straggler = 4;
  const SyntheticJob a = GenerateSyntheticJob(options);
  const SyntheticJob b = GenerateSyntheticJob(options);
  ASSERT_EQ(a.operators.operators.size(), b.operators.operators.size());
  EXPECT_EQ(a.operators.operators.back().end_ns, b.operators.operators.back().end_ns);
  ASSERT_EQ(a.steps.size(), options.steps);
  ASSERT_EQ(a.alerts.size(), 1u);
  EXPECT_EQ(a.alerts[0].ranks, std::vector<uint32_t>{4});
  const StepRecord& late = a.steps.back();
  // The straggler computes longest; the others wait for it in the all-reduce.
  for (const auto& d : late.devices) {
    if (d.rank == 4) continue;
    EXPECT_GT(late.devices[4].compute_ns, d.compute_ns);
    EXPECT_GT(d.wait_ns, late.devices[4].wait_ns);
  }
}

TEST(SyntheticJobTest, PipelineStagesExchangeSendAndRecv) {
  SyntheticJobOptions options;
  options.devices = 8;
  options.stages = 2;
  const SyntheticJob job = GenerateSyntheticJob(options);
  size_t sends = 0, recvs = 0;
  for (const auto& op : job.operators.operators) {
    sends += op.op_class == OpClass::kSend;
    recvs += op.op_class == OpClass::kRecv;
  }
  EXPECT_EQ(sends, 4u * options.steps);
  EXPECT_EQ(sends, recvs);
  EXPECT_EQ(job.devices[5].stage, 1u);
}

}  // namespace
}  // namespace trainscope::viewer
