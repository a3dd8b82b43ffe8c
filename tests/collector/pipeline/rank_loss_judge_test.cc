#include "trainscope/collector/pipeline/rank_loss_judge.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/event_batch_builder.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;
using testing::EventBatchBuilder;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

RankLossJudge::Options TestOptions() {
  return {.grace = absl::Seconds(10), .grace_steps = 3, .together = absl::Seconds(1)};
}

v1::RankStatus Rank(uint32_t rank, bool connected, bool goodbye = false,
                    int64_t last_seen = kT0) {
  v1::RankStatus r;
  r.set_rank(rank);
  r.set_connected(connected);
  r.set_said_goodbye(goodbye);
  r.set_last_seen_unix_ns(last_seen);
  return r;
}

TEST(RankLossJudgeTest, PeersStillConnectedAfterTheGraceMakeItLost) {
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  judge.OnLost(1, 20, kT0, /*peers_connected=*/true);
  const std::map<uint32_t, v1::RankStatus> ranks = {{0, Rank(0, true)}, {1, Rank(1, false)}};
  EXPECT_THAT(judge.Judge(kT0 + 5 * kSecond, ranks, progress, true), IsEmpty());
  EXPECT_EQ(judge.NextDeadline(), absl::FromUnixNanos(kT0 + 10 * kSecond));
  EXPECT_THAT(judge.Judge(kT0 + 10 * kSecond, ranks, progress, true),
              ElementsAre(Field(&RankLossJudge::Verdict::rank, 1u)));
  EXPECT_TRUE(judge.empty());
  EXPECT_EQ(judge.NextDeadline(), absl::InfiniteFuture());
}

TEST(RankLossJudgeTest, APeerStepsPastTheRankMakesItLostBeforeTheGrace) {
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  progress.Note(1, EventBatchBuilder(1).StepMark(1, 20).Build());
  judge.OnLost(1, 20, kT0, true);
  const std::map<uint32_t, v1::RankStatus> ranks = {{0, Rank(0, true)}, {1, Rank(1, false)}};
  progress.Note(0, EventBatchBuilder(1).StepMark(1, 22).Build());
  EXPECT_THAT(judge.Judge(kT0 + 1, ranks, progress, true), IsEmpty());
  progress.Note(0, EventBatchBuilder(2).StepMark(2, 23).Build());
  const auto lost = judge.Judge(kT0 + 2, ranks, progress, true);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].rank, 1u);
  EXPECT_EQ(lost[0].last_step, 20u);
}

TEST(RankLossJudgeTest, APeersGoodbyeNearTheLossMeansTheJobIsEnding) {
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  judge.OnLost(1, 20, kT0, true);
  const std::map<uint32_t, v1::RankStatus> ranks = {
      {0, Rank(0, false, /*goodbye=*/true, kT0 + kSecond)}, {1, Rank(1, false)},
      {2, Rank(2, true)}};
  EXPECT_THAT(judge.Judge(kT0 + 20 * kSecond, ranks, progress, true), IsEmpty());
  EXPECT_TRUE(judge.empty());  // forgotten, not pending
}

TEST(RankLossJudgeTest, WhenEveryRankVanishedTheFirstAndThoseWithItAreNamed) {
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  judge.OnLost(2, 5, kT0, true);                        // the cause
  judge.OnLost(0, 5, kT0 + kSecond / 2, true);          // aborted in the broken collective
  judge.OnLost(1, 5, kT0 + 3 * kSecond, true);          // killed by the launcher later
  judge.OnLost(3, 5, kT0 + 3 * kSecond, /*peers_connected=*/false);  // the last one
  const std::map<uint32_t, v1::RankStatus> ranks = {
      {0, Rank(0, false)}, {1, Rank(1, false)}, {2, Rank(2, false)}, {3, Rank(3, false)}};
  EXPECT_THAT(judge.Judge(kT0 + 3 * kSecond, ranks, progress, /*anyone_connected=*/false),
              ElementsAre(Field(&RankLossJudge::Verdict::rank, 0u),
                          Field(&RankLossJudge::Verdict::rank, 2u)));
  EXPECT_TRUE(judge.empty());
}

TEST(RankLossJudgeTest, AKilledRankWhoseCloseIsReadLastIsNamedWithinTheWindow) {
  // The launcher terminated the peers as soon as rank 1 died; their closes
  // were read first, so rank 1's close found no peer connected.
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  judge.OnLost(0, 40, kT0, true);
  judge.OnLost(2, 40, kT0 + 2'000'000, true);
  judge.OnLost(3, 40, kT0 + 3'000'000, true);
  judge.OnLost(1, 40, kT0 + 4'000'000, /*peers_connected=*/false);
  const std::map<uint32_t, v1::RankStatus> ranks = {
      {0, Rank(0, false)}, {1, Rank(1, false)}, {2, Rank(2, false)}, {3, Rank(3, false)}};
  const auto lost = judge.Judge(kT0 + 4'000'000, ranks, progress, /*anyone_connected=*/false);
  ASSERT_EQ(lost.size(), 4u);
  EXPECT_EQ(lost[1].rank, 1u);
}

TEST(RankLossJudgeTest, TheOnlyRankOfAJobIsNeverALostDevice) {
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  judge.OnLost(0, 40, kT0, /*peers_connected=*/false);
  EXPECT_THAT(judge.Judge(kT0, {{0, Rank(0, false)}}, progress, false), IsEmpty());
  EXPECT_TRUE(judge.empty());
}

TEST(RankLossJudgeTest, ARankThatCameBackIsForgotten) {
  RankLossJudge judge(TestOptions());
  RankStepProgress progress;
  judge.OnLost(1, 20, kT0, true);
  judge.Forget(1);
  const std::map<uint32_t, v1::RankStatus> ranks = {{0, Rank(0, true)}, {1, Rank(1, true)}};
  EXPECT_THAT(judge.Judge(kT0 + 60 * kSecond, ranks, progress, true), IsEmpty());
}

}  // namespace
}  // namespace trainscope::collector
