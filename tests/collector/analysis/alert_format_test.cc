#include "trainscope/collector/analysis/alert_format.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(AlertFormatTest, DurationsTakeTheirUnit) {
  EXPECT_EQ(FormatNs(2e9), "2.00 s");
  EXPECT_EQ(FormatNs(41e6), "41.0 ms");
  EXPECT_EQ(FormatNs(350e3), "350 us");
  EXPECT_EQ(FormatNs(12), "12.0 ns");
  EXPECT_EQ(FormatNs(-3e6), "-3.00 ms");
  EXPECT_EQ(FormatNs(1.5e6), "1.50 ms");  // three significant digits (base), not "1.5 ms"
}

TEST(AlertFormatTest, RatesTakeAnSiPrefix) {
  EXPECT_EQ(FormatRate(2.5e12, "FLOPS"), "2.50 TFLOPS");
  EXPECT_EQ(FormatRate(1.2e9, "FLOPS"), "1.20 GFLOPS");
  EXPECT_EQ(FormatRate(3e6, "B/s"), "3.00 MB/s");
  EXPECT_EQ(FormatRate(1500, "B/s"), "1.50 kB/s");
  EXPECT_EQ(FormatRate(800, "B/s"), "800 B/s");
}

TEST(AlertFormatTest, CountsTakeAnSiSuffix) {
  EXPECT_EQ(FormatCount(2.5e12), "2.50T");
  EXPECT_EQ(FormatCount(1.2e9), "1.20G");
  EXPECT_EQ(FormatCount(3e6), "3.00M");
  EXPECT_EQ(FormatCount(1500), "1.50k");
  EXPECT_EQ(FormatCount(999), "999");
}

TEST(AlertFormatTest, RankListsJoinWithCommas) {
  EXPECT_EQ(RankList({0, 2, 3}), "0,2,3");
  EXPECT_EQ(RankList({}), "");
}

}  // namespace
}  // namespace trainscope::collector
