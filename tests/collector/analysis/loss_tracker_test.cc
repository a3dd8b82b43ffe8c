#include "trainscope/collector/analysis/loss_tracker.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/alert_engine.h"

namespace trainscope::collector {
namespace {

// A rank's report: its items' scores (the rank keeps its own top_n), highest first.
v1::LossReport Report(uint32_t epoch, uint64_t iteration, bool complete,
                      std::vector<std::pair<uint64_t, double>> scores, uint32_t top_n) {
  std::sort(scores.begin(), scores.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (scores.size() > top_n) scores.resize(top_n);
  v1::LossReport report;
  report.set_epoch(epoch);
  report.set_iteration(iteration);
  report.set_epoch_complete(complete);
  report.set_selection_layer("layer4");
  report.set_top_n(top_n);
  for (const auto& [item, score] : scores) {
    v1::ItemScore* s = report.add_top();
    s->set_item(item);
    s->set_contribution(score);
    s->set_label(static_cast<int32_t>(item % 10));
    s->set_prediction(-1);
  }
  return report;
}

std::vector<uint64_t> Items(const v1::LossState& state) {
  std::vector<uint64_t> items;
  for (const v1::DifficultItem& item : state.items()) items.push_back(item.item());
  return items;
}

TEST(LossTrackerTest, MergedTopOfFourRanksEqualsTopOfTheUnion) {
  constexpr uint32_t kTopN = 16;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1);
  std::vector<std::pair<uint64_t, double>> all;
  std::map<uint32_t, std::vector<std::pair<uint64_t, double>>> shard;
  for (uint64_t item = 0; item < 1000; ++item) {
    const double score = noise(rng);
    all.emplace_back(item, score);
    shard[static_cast<uint32_t>(item % 4)].emplace_back(item, score);
  }
  LossTracker tracker;
  for (uint32_t rank = 0; rank < 4; ++rank) tracker.OnRankJoined(rank);
  std::vector<LossTracker::ClosedEpoch> closed;
  for (uint32_t rank = 0; rank < 4; ++rank) {
    LossTracker::Changes changes = tracker.OnReport(rank, Report(0, 10, true, shard[rank], kTopN));
    EXPECT_TRUE(changes.state_changed);
    if (rank < 3) {
      EXPECT_TRUE(changes.closed.empty()) << "closed before rank 3's final list";
    }
    for (auto& c : changes.closed) closed.push_back(c);
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<uint64_t> expected;
  for (uint32_t i = 0; i < kTopN; ++i) expected.push_back(all[i].first);

  ASSERT_EQ(closed.size(), 1u);
  std::vector<uint64_t> got;
  for (const auto& item : closed[0].items) got.push_back(item.score.item());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(closed[0].items[0].position, 1u);
  EXPECT_EQ(closed[0].items[0].score.rank(), static_cast<uint32_t>(expected[0] % 4));
  EXPECT_EQ(Items(tracker.State()), expected);  // between epochs: the last closed one
  EXPECT_EQ(tracker.State().items(0).label(), static_cast<int32_t>(expected[0] % 10));
  EXPECT_EQ(tracker.State().items(0).rank(), static_cast<uint32_t>(expected[0] % 4));
  EXPECT_EQ(tracker.State().last_complete_epoch(), 0u);
}

TEST(LossTrackerTest, AnOpenEpochShowsTheLiveMergeAndALaterListReplacesAnEarlierOne) {
  LossTracker tracker;
  tracker.OnRankJoined(0);
  tracker.OnRankJoined(1);
  tracker.OnReport(0, Report(0, 5, false, {{1, 0.9}, {2, 0.1}}, 2));
  tracker.OnReport(1, Report(0, 5, false, {{3, 0.5}}, 2));
  EXPECT_THAT(Items(tracker.State()), ::testing::ElementsAre(1, 3));
  tracker.OnReport(0, Report(0, 10, false, {{2, 0.8}, {4, 0.7}}, 2));  // rank 0 now says so
  const v1::LossState state = tracker.State();
  EXPECT_THAT(Items(state), ::testing::ElementsAre(2, 4));
  EXPECT_EQ(state.iteration(), 10u);
  EXPECT_FALSE(state.has_last_complete_epoch());
  ASSERT_EQ(state.items(0).history_size(), 1);
  EXPECT_EQ(state.items(0).history(0).position(), 1u);
}

TEST(LossTrackerTest, StreaksCountConsecutiveClosedEpochsAndTheRuleRaisesAndClears) {
  LossTracker tracker;
  tracker.OnRankJoined(0);
  AlertEngine engine("job", v1::RulesConfig());  // difficult_item after 3 epochs
  std::vector<v1::Alert> alerts;
  // Item 7 is in the top in epochs 0 to 3 and 5, then out for good; item 8
  // in epochs 0, 1 and 3 only.
  const std::vector<std::vector<std::pair<uint64_t, double>>> epochs = {
      {{7, 2.0}, {8, 1.0}},  {{7, 2.0}, {8, 1.0}},  {{7, 2.0}, {9, 1.0}},
      {{7, 2.0}, {8, 1.0}},  {{9, 2.0}, {10, 1.0}}, {{7, 2.0}, {10, 1.0}},
      {{9, 2.0}, {10, 1.0}}, {{9, 2.0}, {10, 1.0}}, {{9, 2.0}, {10, 1.0}}};
  std::vector<uint32_t> streak7;
  for (uint32_t e = 0; e < epochs.size(); ++e) {
    LossTracker::Changes changes =
        tracker.OnReport(0, Report(e, 100 * (e + 1), true, epochs[e], 2));
    ASSERT_EQ(changes.closed.size(), 1u);
    for (const auto& item : changes.closed[0].items) {
      if (item.score.item() == 7) streak7.push_back(item.epochs_in_top);
      if (item.score.item() == 8 && e == 3) {
        EXPECT_EQ(item.epochs_in_top, 1u);
      }
    }
    for (v1::Alert& a : engine.OnLossEpoch(changes.closed[0], 10 * e)) alerts.push_back(a);
  }
  EXPECT_THAT(streak7, ::testing::ElementsAre(1, 2, 3, 4, 1));
  // Raised at epoch 2 (third in a row); epoch 4's absence is forgiven by its
  // return in epoch 5; cleared at epoch 8, the third epoch out in a row.
  // Items 9 and 10 reach three epochs in a row at 8 and are raised then.
  std::vector<v1::Alert> about7;
  for (const v1::Alert& a : alerts) {
    if (a.message().find("item 7") != std::string::npos) about7.push_back(a);
  }
  alerts = about7;
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[0].rule(), "difficult_item");
  EXPECT_EQ(alerts[0].state(), v1::ALERT_STATE_RAISED);
  EXPECT_EQ(alerts[0].step(), 20u);
  EXPECT_THAT(alerts[0].message(), ::testing::HasSubstr("item 7 (label 7"));
  EXPECT_EQ(alerts[0].item(), 7u);
  EXPECT_THAT(alerts[0].message(), ::testing::HasSubstr("candidate mislabeled or ambiguous"));
  EXPECT_EQ(alerts[1].state(), v1::ALERT_STATE_CLEARED);
  EXPECT_EQ(alerts[1].step(), 80u);
  EXPECT_EQ(alerts[1].alert_id(), alerts[0].alert_id());
  // The item's history lists every epoch it was in the top.
  LossTracker::Changes none = tracker.OnRankGone(0);
  EXPECT_TRUE(none.closed.empty());
}

TEST(LossTrackerTest, EpochWaitsForSilentRanksUntilTheNextEpochStarts) {
  LossTracker tracker;
  tracker.OnRankJoined(0);
  tracker.OnRankJoined(1);  // never reports (say, another pipeline stage)
  EXPECT_TRUE(tracker.OnReport(0, Report(0, 10, true, {{1, 1.0}}, 4)).closed.empty());
  LossTracker::Changes changes = tracker.OnReport(0, Report(1, 20, false, {{2, 1.0}}, 4));
  ASSERT_EQ(changes.closed.size(), 1u);
  EXPECT_EQ(changes.closed[0].epoch, 0u);
}

TEST(LossTrackerTest, AGoneRankNoLongerHoldsTheEpochBack) {
  LossTracker tracker;
  tracker.OnRankJoined(0);
  tracker.OnRankJoined(1);
  tracker.OnReport(0, Report(0, 10, true, {{1, 1.0}}, 4));
  tracker.OnReport(1, Report(0, 5, false, {{2, 3.0}}, 4));
  LossTracker::Changes changes = tracker.OnRankGone(1);
  ASSERT_EQ(changes.closed.size(), 1u);
  EXPECT_EQ(changes.closed[0].items[0].score.item(), 2u);  // its partial list still counts
}

TEST(LossTrackerTest, SnapshotsAreKeptPerItemBoundedAndAnswered) {
  LossTrackerOptions options;
  options.max_snapshots_per_item = 2;
  options.max_items_with_snapshots = 2;
  LossTracker tracker(options);
  for (uint64_t iteration = 1; iteration <= 3; ++iteration) {
    v1::LossReport report = Report(0, iteration, false, {{5, 1.0}}, 4);
    v1::ItemSnapshot* s = report.add_snapshots();
    s->set_item(5);
    s->set_iteration(iteration);
    s->mutable_input()->set_height(1);
    LossTracker::Changes changes = tracker.OnReport(3, report);
    ASSERT_EQ(changes.snapshots.size(), 1u);
    EXPECT_EQ(changes.snapshots[0].rank(), 3u);
  }
  v1::LossQuery query;
  query.set_want_item(true);
  query.set_item(5);
  v1::LossAnswer answer = tracker.Answer(query);
  ASSERT_EQ(answer.snapshots_size(), 2);
  EXPECT_EQ(answer.snapshots(0).iteration(), 2u);
  EXPECT_EQ(answer.snapshots(1).iteration(), 3u);
  ASSERT_EQ(answer.state().items_size(), 1);
  EXPECT_EQ(answer.state().items(0).snapshots(), 2u);
  EXPECT_TRUE(answer.state().items(0).has_input());
  // Two more items with snapshots: item 5, the least recently updated, loses its own.
  for (uint64_t item : {6, 7}) {
    v1::LossReport report = Report(0, 9, false, {{5, 1.0}}, 4);
    report.add_snapshots()->set_item(item);
    tracker.OnReport(3, report);
  }
  EXPECT_EQ(tracker.Answer(query).snapshots_size(), 0);
}

TEST(LossTrackerTest, ItemRecordsAreBoundedOutOfTheTopLongestFirst) {
  LossTrackerOptions options;
  options.max_items = 3;
  LossTracker tracker(options);
  tracker.OnRankJoined(0);
  // Each epoch's final top-2; item 2 stays in it throughout.
  const std::vector<std::vector<std::pair<uint64_t, double>>> tops = {
      {{1, 0.9}, {2, 0.8}},  // records {1, 2}
      {{3, 0.9}, {2, 0.8}},  // {1, 2, 3}
      {{4, 0.9}, {2, 0.8}},  // 1 (last listed in epoch 0) goes: {2, 3, 4}
      {{3, 0.9}, {2, 0.8}},  // 4 (epoch 2) stays, nothing else to drop: {2, 3, 4}
      {{1, 0.9}, {2, 0.8}},  // 1 again, new; 4 (epoch 2) goes, not 3 (epoch 3): {1, 2, 3}
      {{3, 0.9}, {4, 0.8}}};
  std::map<uint64_t, std::vector<uint32_t>> history;  // of the last closed epoch's items
  for (uint32_t epoch = 0; epoch < tops.size(); ++epoch) {
    ASSERT_EQ(
        tracker.OnReport(0, Report(epoch, epoch * 10 + 9, true, tops[epoch], 2)).closed.size(), 1u);
    const v1::LossState state = tracker.State();
    ASSERT_EQ(state.items_size(), 2) << "epoch " << epoch;
    history.clear();
    for (const v1::DifficultItem& item : state.items()) {
      for (const v1::EpochScore& h : item.history()) history[item.item()].push_back(h.epoch());
    }
    if (epoch == 4) {
      EXPECT_THAT(history[1], ::testing::ElementsAre(4u));  // its epoch 0 went with its record
      EXPECT_THAT(history[2], ::testing::ElementsAre(0u, 1u, 2u, 3u, 4u));
      EXPECT_EQ(state.items(1).epochs_in_top(), 5u);  // item 2's streak is kept whole
    }
  }
  EXPECT_THAT(history[3], ::testing::ElementsAre(1u, 3u, 5u));  // kept: out of the top since 3
  EXPECT_THAT(history[4], ::testing::ElementsAre(5u));          // dropped after epoch 4
}

TEST(LossTrackerTest, TrimmingKeepsAnItemListedInAnOpenEpoch) {
  LossTrackerOptions options;
  options.max_items = 2;
  LossTracker tracker(options);
  tracker.OnRankJoined(0);
  tracker.OnRankJoined(1);
  tracker.OnReport(0, Report(0, 9, true, {{1, 0.9}, {2, 0.8}}, 2));
  ASSERT_EQ(tracker.OnReport(1, Report(0, 9, true, {}, 2)).closed.size(), 1u);  // records {1, 2}
  tracker.OnReport(0, Report(1, 19, true, {{4, 0.9}, {5, 0.8}}, 2));
  // Rank 1 goes on to epoch 2 with item 9 and its maps, which closes epoch 1
  // with records {1, 2, 4, 5, 9}: 1 and 2 go, 9 stays (the live list shows it).
  v1::LossReport live = Report(2, 21, false, {{9, 0.5}}, 2);
  live.add_snapshots()->set_item(9);
  ASSERT_EQ(tracker.OnReport(1, live).closed.size(), 1u);
  v1::LossQuery query;
  query.set_want_item(true);
  query.set_item(9);
  const v1::LossAnswer answer = tracker.Answer(query);
  EXPECT_EQ(answer.snapshots_size(), 1);
  ASSERT_EQ(Items(answer.state()), std::vector<uint64_t>{9});
  EXPECT_EQ(answer.state().items(0).snapshots(), 1u);
}

TEST(LossTrackerTest, AListingsThumbnailShowsForItemsWithoutSnapshotsBounded) {
  LossTrackerOptions options;
  options.max_thumbnails = 2;
  LossTracker tracker(options);
  v1::LossReport report = Report(0, 10, false, {{1, 0.9}, {2, 0.8}, {3, 0.7}}, 3);
  for (int i = 0; i < 3; ++i) {
    v1::Thumbnail* t = report.mutable_top(i)->mutable_input();
    t->set_height(1);
    t->set_width(1);
    t->set_channels(1);
    t->set_pixels(std::string(1, static_cast<char>('a' + i)));
  }
  tracker.OnReport(0, report);
  // A later listing without thumbnails (the rank sends each once) keeps them.
  tracker.OnReport(0, Report(0, 20, false, {{1, 0.9}, {2, 0.8}, {3, 0.7}}, 3));
  const v1::LossState state = tracker.State();
  ASSERT_EQ(Items(state), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_FALSE(state.items(0).has_input());  // the oldest of three, over the bound of 2
  EXPECT_EQ(state.items(1).input().pixels(), "b");
  EXPECT_EQ(state.items(2).input().pixels(), "c");
}

}  // namespace
}  // namespace trainscope::collector
