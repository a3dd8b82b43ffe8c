#include "trainscope/tier/recent_ids.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace trainscope::tier {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(RecentIdsTest, AnIdSeenLatelyIsADuplicate) {
  RecentIds seen(absl::Minutes(10), 100);
  EXPECT_TRUE(seen.Insert("job/halt/1", kT0));
  EXPECT_FALSE(seen.Insert("job/halt/1", kT0 + absl::Minutes(9)));
  EXPECT_TRUE(seen.Insert("job/halt/2", kT0 + absl::Minutes(9)));
}

TEST(RecentIdsTest, IdsOlderThanTheAgeAreForgotten) {
  RecentIds seen(absl::Minutes(10), 100);
  ASSERT_TRUE(seen.Insert("a", kT0));
  ASSERT_TRUE(seen.Insert("b", kT0 + absl::Minutes(5)));
  EXPECT_TRUE(seen.Insert("a", kT0 + absl::Minutes(11)));  // a expired; b kept
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_FALSE(seen.Insert("b", kT0 + absl::Minutes(11)));
}

TEST(RecentIdsTest, TheSetNeverHoldsMoreThanItsCount) {
  RecentIds seen(absl::Hours(1), 1000);
  for (int i = 0; i < 100000; ++i) {
    ASSERT_TRUE(seen.Insert(absl::StrCat("job-", i, "/halt"), kT0 + absl::Milliseconds(i)));
    ASSERT_LE(seen.size(), 1000u);
  }
  // The newest are still deduplicated, the oldest forgotten.
  EXPECT_FALSE(seen.Insert("job-99999/halt", kT0 + absl::Seconds(100)));
  EXPECT_TRUE(seen.Insert("job-0/halt", kT0 + absl::Seconds(100)));
}

}  // namespace
}  // namespace trainscope::tier
