#include "trainscope/collector/analysis/operator_store.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

OperatorRecord MakeOp(uint32_t rank, uint64_t step, int64_t start, int64_t end, uint32_t name,
                      int64_t raw_shift = 0) {
  OperatorRecord op;
  op.rank = rank;
  op.step = step;
  op.start_ns = start;
  op.end_ns = end;
  op.raw_start_ns = start - raw_shift;
  op.raw_end_ns = end - raw_shift;
  op.name = name;
  op.op_class = v1::OPERATOR_CLASS_COMPUTE;
  return op;
}

OperatorRange Range(int64_t start, int64_t end, std::vector<uint32_t> ranks = {},
                    bool raw = false) {
  OperatorRange range;
  range.start_ns = start;
  range.end_ns = end;
  range.ranks = std::move(ranks);
  range.raw_timestamps = raw;
  return range;
}

// Names of the operators `store` finds for `range`, in visiting order.
std::vector<uint32_t> Names(const OperatorStore& store, const OperatorRange& range) {
  std::vector<uint32_t> names;
  store.ForEach(range, [&](const OperatorRecord& op) { names.push_back(op.name); });
  return names;
}

TEST(OperatorStoreTest, LongOperatorStraddlingTheRangeStartIsFound) {
  OperatorStore store;
  // Arrival order as StepAssembler gives it (by end); the store sorts.
  store.Insert({MakeOp(0, 1, 100, 200, 2), MakeOp(0, 1, 300, 400, 3), MakeOp(0, 1, 0, 1000, 1),
                MakeOp(0, 1, 1100, 1200, 4)});
  EXPECT_THAT(Names(store, Range(500, 600)), ElementsAre(1u));
  EXPECT_THAT(Names(store, Range(150, 350)), ElementsAre(1u, 2u, 3u));
  EXPECT_THAT(Names(store, Range(1150, 5000)), ElementsAre(4u));
  EXPECT_THAT(Names(store, Range(2000, 3000)), IsEmpty());
  EXPECT_THAT(Names(store, {}), ElementsAre(1u, 2u, 3u, 4u)) << "0..0: everything, by start";
}

TEST(OperatorStoreTest, DeviceFilterAndRankMajorOrder) {
  OperatorStore store;
  store.Insert({MakeOp(2, 1, 100, 200, 21), MakeOp(0, 1, 100, 200, 1), MakeOp(1, 1, 100, 200, 11),
                MakeOp(0, 1, 300, 400, 2)});
  store.Insert({MakeOp(0, 2, 500, 600, 3), MakeOp(1, 2, 500, 600, 12)});
  EXPECT_THAT(Names(store, Range(0, 1000, {1})), ElementsAre(11u, 12u));
  EXPECT_THAT(Names(store, Range(0, 1000, {2, 0})), ElementsAre(1u, 2u, 3u, 21u));
  EXPECT_THAT(store.Ranks(), ElementsAre(0u, 1u, 2u));
  EXPECT_EQ(store.Extent(false), std::make_pair(int64_t{100}, int64_t{600}));
}

TEST(OperatorStoreTest, RawTimestampQueriesUseTheDevicesClocks) {
  OperatorStore store;
  store.Insert({MakeOp(0, 1, 1000, 1100, 1, /*raw_shift=*/1000),
                MakeOp(1, 1, 1000, 1100, 2, /*raw_shift=*/-5000)});
  EXPECT_THAT(Names(store, Range(0, 200, {}, true)), ElementsAre(1u));
  EXPECT_THAT(Names(store, Range(6000, 6050, {}, true)), ElementsAre(2u));
  EXPECT_THAT(Names(store, Range(1000, 1050)), ElementsAre(1u, 2u));
  EXPECT_EQ(store.Extent(true), std::make_pair(int64_t{0}, int64_t{6100}));
}

TEST(OperatorStoreTest, EvictsTheOldestStepsBeyondTheBudget) {
  OperatorStore store({.max_operators = 10});
  for (uint64_t step = 1; step <= 3; ++step) {
    std::vector<OperatorRecord> ops;
    for (int i = 0; i < 4; ++i) {
      const int64_t t = static_cast<int64_t>(step) * 1000 + i * 100;
      ops.push_back(MakeOp(0, step, t, t + 50, static_cast<uint32_t>(step)));
    }
    store.Insert(std::move(ops));
  }
  const OperatorStoreStats stats = store.stats();
  EXPECT_EQ(stats.operators, 8u);
  EXPECT_EQ(stats.steps, 2u);
  EXPECT_EQ(stats.evicted_steps, 1u);
  EXPECT_EQ(stats.evicted_operators, 4u);
  std::vector<uint64_t> steps;
  store.ForEach({}, [&](const OperatorRecord& op) { steps.push_back(op.step); });
  EXPECT_THAT(steps, ElementsAre(2u, 2u, 2u, 2u, 3u, 3u, 3u, 3u));
}

TEST(OperatorStoreTest, KeepsTheNewestStepEvenWhenItAloneExceedsTheBudget) {
  OperatorStore store({.max_operators = 2});
  store.Insert({MakeOp(0, 1, 0, 1, 1)});
  store.Insert({MakeOp(0, 2, 10, 11, 1), MakeOp(0, 2, 12, 13, 1), MakeOp(0, 2, 14, 15, 1)});
  EXPECT_EQ(store.stats().operators, 3u);
  EXPECT_EQ(store.stats().evicted_steps, 1u);
}

TEST(OperatorStoreTest, ForEachDeviceStepGivesWholeStepsThatTouchTheRange) {
  OperatorStore store;
  store.Insert({MakeOp(0, 1, 100, 200, 1), MakeOp(0, 1, 300, 400, 2), MakeOp(1, 1, 900, 950, 3)});
  store.Insert({MakeOp(0, 2, 1000, 1100, 4)});
  std::vector<std::pair<uint32_t, size_t>> visits;
  store.ForEachDeviceStep(Range(350, 500),
                          [&](uint32_t rank, uint64_t step, absl::Span<const OperatorRecord> ops) {
                            EXPECT_EQ(step, 1u);
                            visits.emplace_back(rank, ops.size());
                          });
  EXPECT_THAT(visits, ElementsAre(std::make_pair(0u, size_t{2})));
}

}  // namespace
}  // namespace trainscope::collector
