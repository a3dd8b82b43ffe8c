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

TEST(RankStepProgressTest, TimesStepsOverEachRanksRecentMarksAndGivesTheShortest) {
  RankStepProgress progress;
  EXPECT_EQ(progress.ShortestStepNs(), 0);
  // Rank 0: slow warm-up steps, then ten steps of 10 us: only the newest
  // eight marks count, so the warm-up is forgotten.
  EventBatchBuilder warm(1);
  warm.StepMark(0, 1).StepMark(1'000'000, 2);
  for (uint64_t step = 3; step <= 12; ++step) {
    warm.StepMark(1'000'000 + static_cast<int64_t>(step - 2) * 10'000, step);
  }
  progress.Note(0, warm.Build());
  EXPECT_EQ(progress.ShortestStepNs(), 10'000);
  // Rank 1: one mark is no step time; then steps of 4 us, the shortest.
  progress.Note(1, EventBatchBuilder(1).StepMark(500, 1).Build());
  EXPECT_EQ(progress.ShortestStepNs(), 10'000);
  progress.Note(1, EventBatchBuilder(2).StepMark(4'500, 2).StepMark(8'500, 3).Build());
  EXPECT_EQ(progress.ShortestStepNs(), 4'000);
  EXPECT_EQ(progress.HighestOfOthers(1), 12u);
  EXPECT_EQ(progress.HighestOfOthers(0), 3u);
  EXPECT_FALSE(RankStepProgress().HighestOfOthers(0).has_value());
}

TEST(RankStepProgressTest, AStepLoopThatStartsAgainIsTimedAnew) {
  RankStepProgress progress;
  progress.Note(0, EventBatchBuilder(1).StepMark(0, 1).StepMark(100, 2).Build());
  EXPECT_EQ(progress.ShortestStepNs(), 100);
  // Step 1 again (an evaluation loop, a restart): no step "took" a negative time.
  progress.Note(0, EventBatchBuilder(2).StepMark(1'000, 1).Build());
  EXPECT_EQ(progress.ShortestStepNs(), 0);
  progress.Note(0, EventBatchBuilder(3).StepMark(1'300, 2).Build());
  EXPECT_EQ(progress.ShortestStepNs(), 300);
}

}  // namespace
}  // namespace trainscope::collector
