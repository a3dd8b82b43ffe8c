#include "trainscope/collector/pipeline/rank_step_progress.h"

#include "gtest/gtest.h"
#include "testing/event_batch_builder.h"

namespace trainscope::collector {
namespace {

using testing::EventBatchBuilder;

TEST(RankStepProgressTest, KeepsTheHighestStepMarkPerRank) {
  RankStepProgress progress;
  EXPECT_TRUE(progress.empty());
  EXPECT_EQ(progress.LastStepOf(0), 0u);
  EXPECT_EQ(progress.Highest(), 0u);

  EXPECT_TRUE(progress.Note(0, EventBatchBuilder(1).StepMark(10, 4).StepMark(20, 7).Build()));
  EXPECT_TRUE(progress.Note(1, EventBatchBuilder(1).StepMark(10, 9).Build()));
  // An older mark arriving late does not move a rank back.
  EXPECT_TRUE(progress.Note(0, EventBatchBuilder(2).StepMark(30, 5).Build()));
  EXPECT_EQ(progress.LastStepOf(0), 7u);
  EXPECT_EQ(progress.LastStepOf(1), 9u);
  EXPECT_EQ(progress.Highest(), 9u);
}

TEST(RankStepProgressTest, BatchesWithoutStepMarksChangeNothing) {
  RankStepProgress progress;
  EXPECT_FALSE(progress.Note(3, EventBatchBuilder(1).Operator("aten::mm", 1, 2).Build()));
  EXPECT_TRUE(progress.empty());
}

}  // namespace
}  // namespace trainscope::collector
