#include "trainscope/viewer/unit_trend_model.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

StepRecord Step(uint64_t n, std::vector<std::pair<uint32_t, int64_t>> step_times,
                std::vector<PairTrafficRecord> traffic) {
  StepRecord s;
  s.step = n;
  for (const auto& [rank, t] : step_times) {
    DeviceStepRecord d;
    d.rank = rank;
    d.step_time_ns = t;
    d.compute_ns = t / 2;
    d.wait_ns = t / 4;
    s.devices.push_back(d);
  }
  s.traffic = std::move(traffic);
  return s;
}

PairTrafficRecord Pair(uint32_t src, uint32_t dst, uint64_t bytes) {
  PairTrafficRecord t;
  t.src_rank = src;
  t.dst_rank = dst;
  t.bytes = bytes;
  t.messages = 2;
  t.duration_ns = 1;
  return t;
}

TEST(UnitTrendModelTest, FramesSumTrafficAndAverageDurationsPerUnit) {
  TrafficModel traffic;
  traffic.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}});
  ClusterHierarchy hierarchy(&traffic);
  UnitTrendModel trends;
  // Steps 1..4; frames of 2 steps: {1,2}, {3,4}.
  trends.AddStep(Step(1, {{0, 100}, {1, 300}, {2, 200}}, {Pair(0, 2, 10), Pair(1, 0, 1)}));
  trends.AddStep(Step(2, {{0, 100}, {1, 100}, {2, 200}}, {Pair(0, 2, 20)}));
  trends.AddStep(Step(3, {{0, 500}, {1, 100}, {2, 200}}, {Pair(2, 0, 40)}));
  trends.AddStep(Step(4, {{0, 100}, {1, 100}, {2, 200}}, {}));
  const UnitTrendModel::Series s = trends.Build(&hierarchy, ClusterLevel::kHost, 2);
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[0].first_step, 1u);
  EXPECT_EQ(s.frames[1].last_step, 4u);
  ASSERT_EQ(s.units, 2u);  // hosts a, b
  // Host a: its slowest device per step, averaged: (300 + 100) / 2, (500 + 100) / 2.
  EXPECT_DOUBLE_EQ(s.at(0, UnitTrendModel::kStepTime, 0), 200);
  EXPECT_DOUBLE_EQ(s.at(0, UnitTrendModel::kStepTime, 1), 300);
  // Bytes are frame totals; a's self-traffic (1 -> 0) counts out and in.
  EXPECT_DOUBLE_EQ(s.at(0, UnitTrendModel::kBytesOut, 0), 31);
  EXPECT_DOUBLE_EQ(s.at(1, UnitTrendModel::kBytesIn, 0), 30);
  EXPECT_DOUBLE_EQ(s.at(0, UnitTrendModel::kBytesIn, 1), 40);
  EXPECT_DOUBLE_EQ(s.at(0, UnitTrendModel::kMessagesOut, 0), 6);
  // Compute per step, summed over the host's devices: (150 + 50 + 50 + 50) / 2.
  EXPECT_DOUBLE_EQ(s.at(0, UnitTrendModel::kCompute, 0), 150);
  // Per device means for the node figures.
  const auto& totals = trends.Totals();
  EXPECT_DOUBLE_EQ(totals.at(0).step_time_ns, 200);
  EXPECT_DOUBLE_EQ(totals.at(0).efficiency(), 0.5);
  EXPECT_DOUBLE_EQ(totals.at(0).bytes_out, 7.5);
}

}  // namespace
}  // namespace trainscope::viewer
