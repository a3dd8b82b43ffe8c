#include "trainscope/collector/analysis/difficult_item_rule.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;

LossTracker::ClosedItem Item(uint64_t item, uint32_t epochs_in_top) {
  LossTracker::ClosedItem out;
  out.score.set_item(item);
  out.score.set_label(3);
  out.score.set_prediction(5);
  out.score.set_rank(1);
  out.score.set_contribution(0.25);
  out.epochs_in_top = epochs_in_top;
  return out;
}

LossTracker::ClosedEpoch Epoch(std::vector<LossTracker::ClosedItem> items) {
  LossTracker::ClosedEpoch epoch;
  epoch.top_n = 10;
  epoch.items = std::move(items);
  return epoch;
}

DifficultItemRule Rule() {
  return DifficultItemRule(WithDefaults(v1::RulesConfig()).difficult_item());
}

std::vector<std::string> Subjects(const std::vector<ExternalFinding>& findings) {
  std::vector<std::string> out;
  for (const ExternalFinding& f : findings)
    out.push_back(f.subject + (f.holds ? " holds" : " left"));
  return out;
}

TEST(DifficultItemRuleTest, ItemsInTheTopForEnoughEpochsHold) {
  const DifficultItemRule rule = Rule();
  const uint32_t needed = WithDefaults(v1::RulesConfig()).difficult_item().consecutive_epochs();
  EXPECT_EQ(rule.hysteresis().raise_after_steps(), 1u);
  EXPECT_EQ(rule.hysteresis().clear_after_steps(), needed);
  auto none_open = [](const std::string&) { return false; };
  const std::vector<ExternalFinding> findings =
      rule.Findings(Epoch({Item(7, needed), Item(8, needed - 1)}), 120, none_open, {});
  EXPECT_THAT(Subjects(findings), ElementsAre("item 7 holds"));
  const ExternalFinding& f = findings[0];
  EXPECT_EQ(f.rule, "difficult_item");
  EXPECT_EQ(f.item, 7u);
  EXPECT_EQ(f.step, 120u);
  EXPECT_EQ(f.metric, "epochs_in_top");
  EXPECT_EQ(f.observed, needed);
  EXPECT_EQ(f.message,
            absl::StrCat("item 7 (label 3, predicted 5, rank 1) has been in the top 10 loss "
                         "contribution for ",
                         needed, " epochs running: a candidate mislabeled or ambiguous item"));
}

TEST(DifficultItemRuleTest, AnOpenItemKeepsHoldingAndATrackedOneThatLeftDoesNot) {
  const DifficultItemRule rule = Rule();
  auto open = [](const std::string& subject) { return subject == "item 8"; };
  const std::vector<ExternalFinding> findings =
      rule.Findings(Epoch({Item(8, 1)}), 130, open, {"item 8", "item 9"});
  EXPECT_THAT(Subjects(findings), ElementsAre("item 8 holds", "item 9 left"));
  EXPECT_EQ(findings[1].message, "item 9 left the loss-contribution top 10");
}

}  // namespace
}  // namespace trainscope::collector
