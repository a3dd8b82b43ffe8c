#include "trainscope/base/statistics.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::base {
namespace {

TEST(StatisticsTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Median({5, 1, 3}), 3);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({}), 0);
}

TEST(StatisticsTest, MeanOfValues) {
  EXPECT_EQ(Mean({1, 2, 6}), 3);
  EXPECT_EQ(Mean({}), 0);
}

TEST(StatisticsTest, QuantileIsLinearBetweenTheNearestRanks) {
  const std::vector<int64_t> v = {40, 10, 30, 20};
  EXPECT_EQ(Quantile(v, 0), 10);
  EXPECT_EQ(Quantile(v, 1), 40);
  // Position 0.5 * 3 = 1.5: halfway between 20 and 30, the median.
  EXPECT_EQ(Quantile(v, 0.5), 25);
  EXPECT_EQ(Quantile(v, 0.5), Median({40, 10, 30, 20}));
  // Position 0.95 * 3 = 2.85: 30 + 0.85 * 10.
  EXPECT_DOUBLE_EQ(Quantile(v, 0.95), 38.5);
  EXPECT_EQ(Quantile(std::vector<int64_t>{7}, 0.95), 7);
  EXPECT_EQ(Quantile(std::vector<int64_t>{}, 0.5), 0);
  // Out-of-range q is clamped.
  EXPECT_EQ(Quantile(v, 2.0), 40);
}

}  // namespace
}  // namespace trainscope::base
