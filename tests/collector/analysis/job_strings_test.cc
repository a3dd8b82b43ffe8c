#include "trainscope/collector/analysis/job_strings.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(JobStringsTest, InternsOnceAndReadsBack) {
  JobStrings strings;
  const uint32_t a = strings.Intern("aten::conv2d");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(strings.Intern("aten::conv2d"), a);
  EXPECT_EQ(strings.Get(a), "aten::conv2d");
  EXPECT_EQ(strings.Intern(""), 0u);
  EXPECT_EQ(strings.Find("never"), 0u);
  EXPECT_EQ(strings.names(), 1u);
  EXPECT_EQ(strings.over_budget(), 0u);
}

TEST(JobStringsTest, NamesPastTheBudgetShareOneCountedId) {
  constexpr uint64_t kBudget = 1'000;
  JobStrings strings({.max_names = kBudget, .max_bytes = 0});
  uint32_t first_refused = 0;
  for (int i = 0; i < 5'000; ++i) {
    const uint32_t id = strings.Intern(absl::StrCat("op_", i));
    if (i < static_cast<int>(kBudget)) {
      EXPECT_EQ(strings.Get(id), absl::StrCat("op_", i));
    } else {
      if (first_refused == 0) first_refused = id;
      EXPECT_EQ(id, first_refused);
    }
  }
  EXPECT_EQ(strings.names(), kBudget);
  EXPECT_EQ(strings.size(), kBudget + 2);  // "" and the over-budget name
  EXPECT_EQ(strings.Get(first_refused), JobStrings::kOverBudgetName);
  EXPECT_EQ(strings.over_budget(), 4'000u);
  // A name kept before the budget ran out keeps its id.
  EXPECT_EQ(strings.Get(strings.Intern("op_7")), "op_7");
  EXPECT_EQ(strings.over_budget(), 4'000u);
}

TEST(JobStringsTest, TheByteBudgetBoundsLongNames) {
  JobStrings strings({.max_names = 0, .max_bytes = 10'000});
  const std::string long_name(1'000, 'k');
  for (int i = 0; i < 100; ++i) strings.Intern(absl::StrCat(i, long_name));
  EXPECT_LE(strings.bytes(), 10'000u);
  EXPECT_GE(strings.names(), 9u);
  EXPECT_EQ(strings.names() + strings.over_budget(), 100u);
}

}  // namespace
}  // namespace trainscope::collector
