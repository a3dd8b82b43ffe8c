#include "trainscope/viewer/marey_track_store.h"

#include <gtest/gtest.h>

#include <vector>

namespace trainscope::viewer {
namespace {

OperatorRecord Op(uint32_t rank, int64_t start, int64_t end, uint32_t name,
                  OpClass cls = OpClass::kCompute, uint64_t step = 1) {
  OperatorRecord op;
  op.rank = rank;
  op.start_ns = start;
  op.end_ns = end;
  op.raw_start_ns = start + 1000 * rank;
  op.raw_end_ns = end + 1000 * rank;
  op.name = name;
  op.op_class = cls;
  op.step = step;
  return op;
}

TEST(MareyTrackStoreTest, OperatorsGoToTheirDevicesAndStreamsAndSetTheExtent) {
  MareyTrackStore store(1000);
  const uint64_t before = store.layout_version();
  OperatorRecord kernel = Op(1, 50, 90, 2, OpClass::kGpuKernel);
  kernel.gpu_stream = 7;
  store.AddOperators({Op(0, 100, 200, 1), Op(1, 10, 40, 1), kernel});
  EXPECT_NE(store.layout_version(), before);  // new tracks: new rows
  store.Prepare();
  ASSERT_EQ(store.devices().size(), 2u);
  EXPECT_EQ(store.devices().at(0)->compute.size(), 1u);
  ASSERT_EQ(store.streams().at(1).size(), 1u);
  EXPECT_EQ(store.streams().at(1).begin()->second->gpu_stream, 7u);
  EXPECT_EQ(store.operator_count(), 3u);
  EXPECT_EQ(store.low(false), 10);
  EXPECT_EQ(store.high(false), 200);
  EXPECT_EQ(store.low(true), 100);    // rank 1's clock is 1 us ahead: 1010
  EXPECT_EQ(store.high(true), 1090);  // its kernel ends at 1090 on it
  // More operators on known tracks: the rows stay, the data changes.
  const uint64_t layout = store.layout_version(), data = store.data_version();
  store.AddOperators({Op(0, 300, 400, 1)});
  EXPECT_EQ(store.layout_version(), layout);
  EXPECT_NE(store.data_version(), data);
  EXPECT_EQ(store.OperatorExtent({0, 1}, 1, 1, false), std::make_pair(int64_t{10}, int64_t{400}));
  EXPECT_FALSE(store.OperatorExtent({0}, 9, 1, false).has_value());
}

TEST(MareyTrackStoreTest, OldestStepsAreEvictedPastTheCap) {
  MareyTrackStore store(100);
  for (uint64_t step = 1; step <= 30; ++step) {
    std::vector<OperatorRecord> ops;
    for (int i = 0; i < 10; ++i) {
      const int64_t t = static_cast<int64_t>(step) * 1000 + i * 10;
      ops.push_back(Op(0, t, t + 5, 1, OpClass::kCompute, step));
    }
    store.AddOperators(ops);
  }
  EXPECT_LE(store.operator_count(), 100u);
  EXPECT_EQ(store.operator_count() + store.evicted_operators(), 300u);
  store.Prepare();
  const MareyTrack& track = *store.devices().at(0);
  EXPECT_EQ(track.compute.size(), store.operator_count());
  EXPECT_EQ(track.busy_prefix.size(), track.compute.size() + 1);  // indexes rebuilt
  EXPECT_GE(store.low(false), 20'000);                            // the oldest steps are gone
}

TEST(MareyTrackStoreTest, AnAlertBlamesItsCauseOrItsOnlyDeviceNeverAWholeJob) {
  MareyTrackStore store(1000);
  Alert straggler;
  straggler.cause = 2;
  straggler.ranks = {0, 1, 3};
  Alert single;
  single.ranks = {5};
  Alert job_wide;
  job_wide.ranks = {0, 1, 2, 3};
  store.SetAlerts({straggler, single, job_wide});
  const auto& by_rank = store.alerts_by_rank();
  EXPECT_EQ(by_rank.size(), 2u);
  EXPECT_TRUE(by_rank.count(2));
  EXPECT_TRUE(by_rank.count(5));
}

TEST(MareyTrackStoreTest, ClearDropsEverything) {
  MareyTrackStore store(1000);
  store.AddOperators({Op(0, 100, 200, 1)});
  store.AddStep(StepRecord{1, 100, 200, {}});
  const uint64_t layout = store.layout_version();
  store.Clear();
  EXPECT_NE(store.layout_version(), layout);
  EXPECT_TRUE(store.devices().empty());
  EXPECT_TRUE(store.steps().empty());
  EXPECT_EQ(store.operator_count(), 0u);
  EXPECT_GT(store.low(false), store.high(false));  // no data
}

}  // namespace
}  // namespace trainscope::viewer
