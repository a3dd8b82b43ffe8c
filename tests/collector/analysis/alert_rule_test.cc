#include "trainscope/collector/analysis/alert_rule.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(AlertRuleTest, BaseAlertNamesTheRuleAndNoCause) {
  const v1::Alert a = BaseAlert("straggler");
  EXPECT_EQ(a.rule(), "straggler");
  EXPECT_EQ(a.cause_rank(), -1);
  EXPECT_EQ(a.link_src_rank(), -1);
  EXPECT_EQ(a.link_dst_rank(), -1);
  EXPECT_EQ(a.stage(), -1);
  EXPECT_EQ(a.alert_id(), 0u);
}

TEST(AlertRuleTest, SubjectsSortNumerically) {
  EXPECT_LT(RankSubject(2), RankSubject(10));
  EXPECT_LT(StageSubject(9), StageSubject(11));
  EXPECT_EQ(RankSubject(3), "rank 0000000003");
  EXPECT_EQ(StageSubject(1), "stage 0000000001");
}

}  // namespace
}  // namespace trainscope::collector
