// What the window says when --max-operators cut a stored job (issue 23.5).
#include "trainscope/viewer/operator_coverage.h"

#include <gtest/gtest.h>

#include <string>

namespace trainscope::viewer {
namespace {

TEST(OperatorCoverageTest, NothingCutSaysNothing) {
  const OperatorCoverage all(500, 500, 1000, {{1, 10}}, {{1, 10}}, std::nullopt);
  EXPECT_FALSE(all.cut());
  EXPECT_EQ(all.Notice(), "");
  EXPECT_FALSE(OperatorCoverage().cut());
}

TEST(OperatorCoverageTest, ACutJobSaysWhatWasLoadedOfWhatAndHowToLoadARange) {
  const OperatorCoverage cut(52'340, 1'000, 1'000, {{1, 600}}, {{590, 600}}, std::nullopt);
  EXPECT_TRUE(cut.cut());
  EXPECT_EQ(cut.Notice(),
            "Showing 1,000 of 52,340 operators (--max-operators 1,000): steps 590-600 of the "
            "job's steps 1-600. Load a range with --steps FIRST-LAST (e.g. --steps 1-10) or "
            "raise --max-operators.");
}

TEST(OperatorCoverageTest, ARangeCutByTheBoundSaysMoreThan) {
  const OperatorCoverage range(std::nullopt, 4'000'000, 4'000'000, {{0, 9000}}, {{100, 180}},
                               {{100, 200}});
  EXPECT_TRUE(range.cut());
  const std::string notice = range.Notice();
  EXPECT_NE(notice.find("Showing 4,000,000 of more than 4,000,000 operators"), std::string::npos)
      << notice;
  EXPECT_NE(notice.find("steps 100-180 of the range's steps 100-200"), std::string::npos) << notice;
}

TEST(OperatorCoverageTest, GroupsThousands) {
  EXPECT_EQ(OperatorCoverage::Grouped(0), "0");
  EXPECT_EQ(OperatorCoverage::Grouped(999), "999");
  EXPECT_EQ(OperatorCoverage::Grouped(1000), "1,000");
  EXPECT_EQ(OperatorCoverage::Grouped(1234567), "1,234,567");
}

}  // namespace
}  // namespace trainscope::viewer
