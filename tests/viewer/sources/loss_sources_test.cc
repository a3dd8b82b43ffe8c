// Loss contribution from the protos to the models: conversion (half floats
// decoded, broken maps left empty), a stored job opened like the viewer
// opens it, and live deltas through the coalescer into ViewerState.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "loss_fixture.h"
#include "trainscope/viewer/feed_coalescer.h"
#include "trainscope/viewer/proto_convert.h"
#include "trainscope/viewer/stored_job_loader.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

using ::testing::ElementsAre;
using testing::EncodeHalfs;
using testing::LossFixture;
using testing::MakeLossFixture;

TEST(LossProtoConvertTest, SnapshotMapsAreDecodedFromHalves) {
  trainscope::v1::ItemSnapshot snapshot;
  snapshot.set_item(42);
  snapshot.set_epoch(3);
  snapshot.set_iteration(612);
  snapshot.set_label(2);
  snapshot.set_prediction(5);
  snapshot.set_contribution(3.25);
  snapshot.set_rank(1);
  snapshot.mutable_input()->set_height(1);
  snapshot.mutable_input()->set_width(2);
  snapshot.mutable_input()->set_channels(3);
  snapshot.mutable_input()->set_pixels(std::string("\x01\x02\x03\x04\x05\x06", 6));
  auto* map = snapshot.add_maps();
  map->set_layer("conv1");
  map->set_height(1);
  map->set_width(2);
  map->set_contribution(std::string("\x00\x3C\x00\x40", 4));  // 1, 2
  map->set_reduction(std::string("\x00\x00\x00\x38", 4));     // 0, 0.5
  auto* broken = snapshot.add_maps();
  broken->set_layer("conv2");
  broken->set_height(2);
  broken->set_width(2);
  broken->set_contribution(std::string("\x00\x3C", 2));  // one half for four pixels
  broken->set_reduction(std::string(8, '\0'));

  const ItemSnapshotRecord out = ConvertItemSnapshot(snapshot);
  EXPECT_EQ(out.item, 42u);
  EXPECT_EQ(out.epoch, 3u);
  EXPECT_EQ(out.iteration, 612u);
  EXPECT_EQ(out.label, 2);
  EXPECT_EQ(out.prediction, 5);
  EXPECT_DOUBLE_EQ(out.contribution, 3.25);
  EXPECT_EQ(out.rank, 1u);
  EXPECT_TRUE(out.input.valid());
  EXPECT_THAT(out.input.pixels, ElementsAre(1, 2, 3, 4, 5, 6));
  ASSERT_EQ(out.maps.size(), 2u);
  EXPECT_THAT(out.maps[0].contribution, ElementsAre(1.0f, 2.0f));
  EXPECT_THAT(out.maps[0].reduction, ElementsAre(0.0f, 0.5f));
  EXPECT_EQ(out.maps[1].height, 2u);
  EXPECT_TRUE(out.maps[1].contribution.empty());
  EXPECT_TRUE(out.maps[1].reduction.empty());  // both or neither
}

TEST(LossProtoConvertTest, StateAndAnswerKeepEveryField) {
  const LossFixture fixture = MakeLossFixture({});
  const uint64_t item = fixture.mislabeled[0];
  const trainscope::v1::LossAnswer answer = fixture.Answer(item);
  const LossData data = ConvertLossAnswer(answer, item);
  ASSERT_TRUE(data.state.has_value());
  const LossStateRecord& state = *data.state;
  EXPECT_EQ(state.epoch, 4u);
  EXPECT_EQ(state.last_complete_epoch, 4u);
  EXPECT_EQ(state.top_n, 12u);
  EXPECT_EQ(state.selection_layer, "fc1");
  EXPECT_THAT(state.monitored_layers, ElementsAre("conv1", "conv2"));
  ASSERT_EQ(state.items.size(), 12u);
  for (int i = 0; i < answer.state().items_size(); ++i) {
    const auto& want = answer.state().items(i);
    const DifficultItemRecord& got = state.items[i];
    EXPECT_EQ(got.item, want.item());
    EXPECT_EQ(got.contribution, want.contribution());
    EXPECT_EQ(got.label, want.label());
    EXPECT_EQ(got.prediction, want.prediction());
    EXPECT_EQ(got.rank, want.rank());
    EXPECT_EQ(got.epochs_in_top, want.epochs_in_top());
    EXPECT_EQ(got.history.size(), static_cast<size_t>(want.history_size()));
    EXPECT_EQ(got.snapshots, want.snapshots());
  }
  ASSERT_EQ(data.snapshots.size(), 1u);
  const std::vector<ItemSnapshotRecord>& snapshots = data.snapshots.at(item);
  ASSERT_EQ(snapshots.size(), 5u);  // one per epoch: the item is in one batch an epoch
  for (const ItemSnapshotRecord& s : snapshots) {
    ASSERT_EQ(s.maps.size(), 2u);
    EXPECT_EQ(s.maps[0].contribution.size(), 64u);
    EXPECT_EQ(s.maps[1].contribution.size(), 16u);
  }
  EXPECT_TRUE(ConvertLossAnswer(answer, std::nullopt).snapshots.empty());
}

TEST(LossStoredJobTest, AStoredJobBringsTheListAndEveryListedItemsSnapshots) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("viewer-loss-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const LossFixture fixture = MakeLossFixture({});
  ASSERT_TRUE(fixture.WriteStoredJob(dir, "digits").ok());
  absl::StatusOr<JobData> data = LoadStoredJob(dir, "digits", {});
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_TRUE(data->loss.state.has_value());
  const trainscope::v1::LossState want = fixture.Answer(std::nullopt).state();
  ASSERT_EQ(data->loss.state->items.size(), static_cast<size_t>(want.items_size()));
  for (int i = 0; i < want.items_size(); ++i) {
    const uint64_t item = want.items(i).item();
    EXPECT_EQ(data->loss.state->items[i].item, item);
    ASSERT_TRUE(data->loss.snapshots.count(item)) << item;
    EXPECT_EQ(data->loss.snapshots.at(item).size(), want.items(i).snapshots()) << item;
  }
  // The mislabeled items head the list, five epochs in the top.
  ViewerState state;
  state.Load(*data);
  const std::vector<LossModel::Cell> cells = state.loss.Cells();
  std::vector<uint64_t> top4;
  for (size_t i = 0; i < 4; ++i) {
    top4.push_back(cells[i].item);
    EXPECT_TRUE(cells[i].misclassified);
    EXPECT_EQ(cells[i].epochs_in_top, 5u);
  }
  EXPECT_THAT(top4, ElementsAre(151, 99, 42, 7));
  EXPECT_EQ(state.loss.chosen_item(), 151u);
  EXPECT_EQ(state.loss.CurrentFrame()->count, 5u);
  std::filesystem::remove_all(dir);
}

TEST(LossStoredJobTest, AJobWithoutLossReportsHasAnEmptyList) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("viewer-noloss-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  LossFixture empty = MakeLossFixture({.epochs = 0});
  ASSERT_TRUE(empty.WriteStoredJob(dir, "plain").ok());
  absl::StatusOr<JobData> data = LoadStoredJob(dir, "plain", {});
  ASSERT_TRUE(data.ok()) << data.status();
  ViewerState state;
  state.Load(*data);
  EXPECT_FALSE(state.loss.has_data());
  EXPECT_FALSE(state.loss.chosen_item().has_value());
  std::filesystem::remove_all(dir);
}

TEST(LossFeedCoalescerTest, NewestListWinsSnapshotsAddUpAndAreBounded) {
  FeedCoalescer coalescer(/*max_pending_operators=*/100, /*max_pending_steps=*/100,
                          /*max_pending_snapshots=*/3);
  for (uint32_t epoch = 1; epoch <= 2; ++epoch) {
    FeedCoalescer::Delta delta;
    delta.loss.emplace();
    delta.loss->state.emplace().epoch = epoch;
    for (uint64_t it = 0; it < 2; ++it) {
      ItemSnapshotRecord& s = delta.item_snapshots.emplace_back();
      s.item = 7;
      s.iteration = epoch * 10 + it;
    }
    coalescer.Post(std::move(delta));
  }
  FeedCoalescer::Delta answer;
  answer.loss.emplace();
  answer.loss->snapshots[7].emplace_back().item = 7;
  coalescer.Post(std::move(answer));
  std::optional<FeedCoalescer::Delta> taken = coalescer.Take();
  ASSERT_TRUE(taken.has_value());
  ASSERT_TRUE(taken->loss.has_value());
  EXPECT_EQ(taken->loss->state->epoch, 2u);  // the answer carried no state
  EXPECT_EQ(taken->loss->snapshots.at(7).size(), 1u);
  ASSERT_EQ(taken->item_snapshots.size(), 3u);
  EXPECT_EQ(taken->item_snapshots.front().iteration, 11u);
  EXPECT_EQ(coalescer.stats().snapshots_dropped, 1u);
  EXPECT_EQ(coalescer.stats().states_skipped, 1u);
}

TEST(LossViewerStateTest, LiveDeltasFillTheLossViewsAndAResetKeepsTheChoice) {
  const LossFixture fixture = MakeLossFixture({});
  ViewerState state;
  FeedCoalescer::Delta history;
  history.reset = true;
  history.loss = ConvertLossAnswer(fixture.Answer(151), 151);
  state.Apply(std::move(history));
  EXPECT_EQ(state.loss.chosen_item(), 151u);
  EXPECT_FALSE(state.loss.NeedsSnapshots());
  EXPECT_EQ(state.loss.CurrentFrame()->count, 5u);
  // A new snapshot on "<job>/maps" appends to the shown item's iterations.
  ItemSnapshotRecord next = state.loss.ChosenSnapshots().back();
  next.iteration += 20;
  FeedCoalescer::Delta live;
  live.item_snapshots.push_back(next);
  state.Apply(std::move(live));
  EXPECT_EQ(state.loss.CurrentFrame()->count, 6u);
  EXPECT_EQ(state.loss.CurrentFrame()->iteration, next.iteration);
  state.loss.Choose(7);
  EXPECT_TRUE(state.loss.NeedsSnapshots());
  FeedCoalescer::Delta reset;
  reset.reset = true;
  state.Apply(std::move(reset));
  EXPECT_FALSE(state.loss.has_data());
  EXPECT_EQ(state.loss.chosen_item(), 7u);
}

}  // namespace
}  // namespace trainscope::viewer
