#include "trainscope/viewer/traffic_model.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

PairTrafficRecord Pair(uint64_t step, uint32_t src, uint32_t dst, uint64_t bytes, int64_t ns,
                       const std::string& group = "", uint32_t messages = 1) {
  PairTrafficRecord t;
  t.step = step;
  t.src_rank = src;
  t.dst_rank = dst;
  t.group = group;
  t.bytes = bytes;
  t.duration_ns = ns;
  t.messages = messages;
  return t;
}

StepRecord Step(uint64_t step, std::vector<PairTrafficRecord> traffic) {
  StepRecord s;
  s.step = step;
  s.traffic = std::move(traffic);
  return s;
}

TEST(TrafficModelTest, CellsArePairTotalsOverStepsAndGroups) {
  TrafficModel model;
  model.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}});
  model.AddStep(Step(
      1, {Pair(1, 0, 1, 100, 10, "", 2), Pair(1, 0, 1, 50, 5, "pg:x", 1), Pair(1, 1, 2, 7, 3)}));
  model.AddStep(Step(2, {Pair(2, 0, 1, 1000, 100, "", 4), Pair(2, 2, 0, 9, 1)}));
  const TrafficModel::Matrix& m = model.matrix();
  ASSERT_EQ(m.size(), 3u);
  const TrafficModel::Cell& c01 = m.at(0, 1);
  EXPECT_EQ(c01.bytes, 1150u);
  EXPECT_EQ(c01.messages, 7u);
  EXPECT_EQ(c01.duration_ns, 115);
  EXPECT_EQ(c01.steps, 2u);
  EXPECT_DOUBLE_EQ(c01.bytes_per_second(), 1150.0 * 1e9 / 115.0);
  EXPECT_EQ(m.at(1, 0).bytes, 0u);  // direction matters
  EXPECT_EQ(m.at(1, 2).bytes, 7u);
  EXPECT_EQ(m.at(2, 0).bytes, 9u);
  EXPECT_EQ(m.row_bytes[0], 1150u);
  EXPECT_EQ(m.row_bytes[1], 7u);
  EXPECT_EQ(m.row_ns[0], 115);
  EXPECT_EQ(*m.first_step, 1u);
  EXPECT_EQ(*m.last_step, 2u);

  model.SetStepRange(2, std::nullopt);
  const TrafficModel::Matrix& late = model.matrix();
  EXPECT_EQ(late.at(0, 1).bytes, 1000u);
  EXPECT_EQ(late.at(0, 1).steps, 1u);
  EXPECT_EQ(late.at(1, 2).bytes, 0u);
  EXPECT_EQ(late.size(), 3u);  // devices stay while the range moves
  EXPECT_EQ(*late.first_step, 2u);
}

TEST(TrafficModelTest, DevicesAreOrderedByHostThenRank) {
  TrafficModel model;
  // Hosts from SetDevices for some, from the traffic for the others.
  model.SetDevices({{3, 0, "alpha"}, {0, 0, "beta"}});
  PairTrafficRecord t = Pair(1, 2, 1, 10, 1);
  t.src_host = "alpha";
  t.dst_host = "beta";
  model.AddStep(Step(1, {t, Pair(1, 3, 0, 5, 1)}));
  const TrafficModel::Matrix& m = model.matrix();
  ASSERT_EQ(m.size(), 4u);
  std::vector<std::pair<std::string, uint32_t>> order;
  for (const auto& d : m.devices) order.push_back({d.host, d.rank});
  EXPECT_EQ(order, (std::vector<std::pair<std::string, uint32_t>>{
                       {"alpha", 2}, {"alpha", 3}, {"beta", 0}, {"beta", 1}}));
  EXPECT_EQ(*m.IndexOf(1), 3u);
  EXPECT_EQ(m.at(0, 3).bytes, 10u);  // rank 2 -> rank 1
  EXPECT_FALSE(m.IndexOf(9).has_value());
}

TEST(TrafficModelTest, ASlowLinkIsTheHeaviestCellAndItsBandwidthBoxSitsLow) {
  // A 16-device ring: every device sends the same bytes to the next; the
  // link 5 -> 6 takes 8x as long.
  TrafficModel model;
  std::vector<DeviceInfo> devices;
  for (uint32_t r = 0; r < 16; ++r) devices.push_back({r, 0, r < 8 ? "h0" : "h1"});
  model.SetDevices(devices);
  for (uint64_t s = 1; s <= 5; ++s) {
    std::vector<PairTrafficRecord> ring;
    for (uint32_t r = 0; r < 16; ++r) {
      const int64_t ns = (r == 5 ? 8'000'000 : 1'000'000) + static_cast<int64_t>(s) * 1000;
      ring.push_back(Pair(s, r, (r + 1) % 16, 50 << 20, ns));
    }
    model.AddStep(Step(s, ring));
  }
  const auto heaviest = model.HeaviestCell();
  ASSERT_TRUE(heaviest.has_value());
  const TrafficModel::Matrix& m = model.matrix();
  EXPECT_EQ(m.devices[heaviest->first].rank, 5u);
  EXPECT_EQ(m.devices[heaviest->second].rank, 6u);

  const TrafficModel::BoxStats slow = TrafficModel::Box(model.LinkBandwidths(5, 6));
  const TrafficModel::BoxStats fast = TrafficModel::Box(model.LinkBandwidths(4, 5));
  EXPECT_EQ(slow.count, 5u);
  EXPECT_LT(slow.max, fast.min / 4);
  EXPECT_TRUE(model.LinkBandwidths(6, 5).empty());
}

TEST(TrafficModelTest, BoxInterpolatesQuartiles) {
  const TrafficModel::BoxStats box = TrafficModel::Box({5, 1, 4, 2, 3});
  EXPECT_EQ(box.count, 5u);
  EXPECT_DOUBLE_EQ(box.min, 1);
  EXPECT_DOUBLE_EQ(box.q1, 2);
  EXPECT_DOUBLE_EQ(box.median, 3);
  EXPECT_DOUBLE_EQ(box.q3, 4);
  EXPECT_DOUBLE_EQ(box.max, 5);
  const TrafficModel::BoxStats two = TrafficModel::Box({10, 20});
  EXPECT_DOUBLE_EQ(two.median, 15);
  EXPECT_DOUBLE_EQ(two.q1, 12.5);
  EXPECT_EQ(TrafficModel::Box({}).count, 0u);
}

TEST(TrafficModelTest, KeepsOnlyTheNewestStepsAndClears) {
  TrafficModel model(2);
  for (uint64_t s = 1; s <= 3; ++s) model.AddStep(Step(s, {Pair(s, 0, 1, 10, 1)}));
  EXPECT_EQ(model.matrix().at(0, 1).bytes, 20u);
  EXPECT_EQ(*model.matrix().first_step, 2u);
  model.Clear();
  EXPECT_FALSE(model.has_traffic());
  EXPECT_EQ(model.matrix().size(), 0u);
  EXPECT_FALSE(model.HeaviestCell().has_value());
}

}  // namespace
}  // namespace trainscope::viewer
