#include "trainscope/collector/ingest/memory_limiter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

MemoryLimiterOptions Options(uint64_t* rss, int* trims) {
  MemoryLimiterOptions options;
  options.limit_bytes = 100 * kMiB;  // soft limit 80 MiB
  options.check_interval = absl::ZeroDuration();
  options.rss = [rss] { return *rss; };
  options.trim = [trims] { ++*trims; };
  return options;
}

TEST(MemoryLimiterTest, RefusesOverTheSoftLimitAndCountsEachRefusal) {
  uint64_t rss = 50 * kMiB;
  int trims = 0;
  MemoryLimiter limiter(Options(&rss, &trims));
  EXPECT_EQ(limiter.soft_limit(), 80 * kMiB);
  EXPECT_FALSE(limiter.Refusal().has_value());
  rss = 81 * kMiB;
  std::optional<std::string> why = limiter.Refusal();
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, AllOf(HasSubstr("resident 81 MiB"), HasSubstr("soft limit 80 MiB"),
                          HasSubstr("--memory-limit-mib=100")));
  EXPECT_TRUE(limiter.Refusal().has_value());
  EXPECT_EQ(limiter.refused(), 2u);
  EXPECT_EQ(trims, 0);  // under the hard limit nothing is trimmed
  rss = 79 * kMiB;      // back under: accepted again
  EXPECT_FALSE(limiter.Refusal().has_value());
  EXPECT_EQ(limiter.refused(), 2u);
}

TEST(MemoryLimiterTest, OverTheHardLimitFreedMemoryIsReturnedBeforeJudging) {
  uint64_t rss = 120 * kMiB;
  int trims = 0;
  MemoryLimiterOptions options = Options(&rss, &trims);
  options.trim = [&] {
    ++trims;
    rss = 60 * kMiB;  // a job ended: its memory goes back once trimmed
  };
  MemoryLimiter limiter(std::move(options));
  EXPECT_FALSE(limiter.Refusal().has_value());
  EXPECT_EQ(trims, 1);
  EXPECT_EQ(limiter.last_rss(), 60 * kMiB);
}

TEST(MemoryLimiterTest, NoLimitNeverRefusesNorReads) {
  MemoryLimiterOptions options;
  options.rss = [] {
    ADD_FAILURE() << "read RSS without a limit";
    return uint64_t{1} << 40;
  };
  MemoryLimiter limiter(std::move(options));
  EXPECT_FALSE(limiter.Refusal().has_value());
}

TEST(MemoryLimiterTest, ReadsRssAtMostOncePerInterval) {
  int reads = 0;
  MemoryLimiterOptions options;
  options.limit_bytes = 100 * kMiB;
  options.check_interval = absl::Hours(1);
  options.rss = [&] {
    ++reads;
    return 90 * kMiB;
  };
  MemoryLimiter limiter(std::move(options));
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(limiter.Refusal().has_value());
  EXPECT_EQ(reads, 1);
  EXPECT_GT(MemoryLimiter::ProcessRss(), 0u);
}

}  // namespace
}  // namespace trainscope::collector
