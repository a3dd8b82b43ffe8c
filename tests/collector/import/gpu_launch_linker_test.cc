#include "trainscope/collector/import/gpu_launch_linker.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

SortedTraceEvent At(int64_t pid, int64_t tid, int64_t ts) {
  SortedTraceEvent e;
  e.pid = pid;
  e.tid = tid;
  e.ts_ns = ts;
  return e;
}

TEST(GpuLaunchLinkerTest, CorrelationFirstThenFlowsAtTheSamePlaceAndTime) {
  GpuLaunchLinker linker(16);
  SortedTraceEvent kernel = At(0, 7, 1000);
  EXPECT_EQ(linker.CorrelationOf(kernel), 0u);
  SortedTraceEvent flow = At(0, 7, 1000);
  flow.phase = TraceEvent::Phase::kFlowEnd;
  flow.flow_id = 42;
  linker.OnFlow(flow);
  EXPECT_EQ(linker.CorrelationOf(kernel), 42u) << "the ac2g flow ending at the kernel";
  EXPECT_EQ(linker.CorrelationOf(At(0, 7, 1001)), 0u) << "another time: not that flow's";
  EXPECT_EQ(linker.CorrelationOf(At(0, 8, 1000)), 0u) << "another stream";
  kernel.has_correlation = true;
  kernel.correlation = 9;
  EXPECT_EQ(linker.CorrelationOf(kernel), 9u) << "args.correlation wins";
  EXPECT_EQ(linker.flows(), 1u);
}

TEST(GpuLaunchLinkerTest, ABoundedMapForgetsTheOldestLaunchesAndCountsThem) {
  GpuLaunchLinker linker(3);
  for (uint64_t c = 1; c <= 5; ++c) linker.AddLaunch(c, {.start_ns = static_cast<int64_t>(c)});
  EXPECT_EQ(linker.Find(1), nullptr);
  EXPECT_EQ(linker.Find(2), nullptr);
  ASSERT_NE(linker.Find(3), nullptr);
  EXPECT_EQ(linker.Find(5)->start_ns, 5);
  EXPECT_EQ(linker.forgotten(), 2u);
  EXPECT_EQ(linker.launches(), 5u);
  linker.AddLaunch(0, {});  // no correlation: nothing to remember
  EXPECT_EQ(linker.launches(), 5u);
  EXPECT_EQ(linker.Find(0), nullptr);
}

}  // namespace
}  // namespace trainscope::collector
