// The loss-contribution model without a screen: the half decoder, the
// Selection View's order and candidate flags, the Monitoring View's frame
// (shared scale, columns, slider) and the layouts' geometry.
#include "trainscope/viewer/loss_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "trainscope/viewer/half_float.h"
#include "trainscope/viewer/loss_drawing.h"

namespace trainscope::viewer {
namespace {

using ::testing::ElementsAre;

TEST(LossHalfFloatTest, DecodesNormalsSubnormalsInfinitiesAndNaN) {
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x3800), 0.5f);
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);                      // the largest half
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));         // the smallest normal
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));         // the smallest subnormal
  EXPECT_EQ(HalfToFloat(0x03FF), 1023 * std::ldexp(1.0f, -24));  // the largest subnormal
  EXPECT_EQ(HalfToFloat(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
  EXPECT_EQ(HalfToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(HalfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7C01)));
}

TEST(LossHalfFloatTest, DecodesLittleEndianAndRefusesAWrongLength) {
  std::vector<float> values;
  ASSERT_TRUE(DecodeHalfs(std::string("\x00\x3C\x00\xC0\x01\x00", 6), 3, &values));
  EXPECT_THAT(values, ElementsAre(1.0f, -2.0f, std::ldexp(1.0f, -24)));
  EXPECT_FALSE(DecodeHalfs(std::string("\x00\x3C\x00", 3), 2, &values));
  EXPECT_TRUE(values.empty());
  EXPECT_FALSE(DecodeHalfs(std::string(6, '\0'), 2, &values));
  EXPECT_TRUE(values.empty());
}

DifficultItemRecord Item(uint64_t item, double contribution, int32_t label = 1,
                         int32_t prediction = 1, uint32_t epochs_in_top = 1) {
  DifficultItemRecord r;
  r.item = item;
  r.contribution = contribution;
  r.label = label;
  r.prediction = prediction;
  r.epochs_in_top = epochs_in_top;
  r.input = {2, 2, 1, {0, 85, 170, 255}};
  return r;
}

LossStateRecord State(std::vector<DifficultItemRecord> items) {
  LossStateRecord state;
  state.epoch = 4;
  state.iteration = 800;
  state.top_n = static_cast<uint32_t>(items.size());
  state.selection_layer = "fc1";
  state.monitored_layers = {"conv1", "conv2"};
  state.items = std::move(items);
  return state;
}

// A snapshot with a 2x2 conv1 map and a 1x1 conv2 map: C = c, R = r.
ItemSnapshotRecord Snapshot(uint64_t item, uint64_t iteration, std::vector<float> c,
                            std::vector<float> r, float conv2 = 0) {
  ItemSnapshotRecord s;
  s.item = item;
  s.iteration = iteration;
  s.epoch = static_cast<uint32_t>(iteration / 100);
  s.label = 1;
  s.prediction = 2;
  s.input = {2, 2, 3, std::vector<uint8_t>(12, 128)};
  s.maps.push_back({"conv1", 2, 2, std::move(c), std::move(r)});
  s.maps.push_back({"conv2", 1, 1, {conv2}, {0}});
  return s;
}

std::vector<uint64_t> CellItems(const LossModel& model) {
  std::vector<uint64_t> items;
  for (const LossModel::Cell& cell : model.Cells()) items.push_back(cell.item);
  return items;
}

TEST(LossModelTest, CellsGoByContributionDescendingTiesByItem) {
  LossModel model;
  model.SetState(State({Item(5, 0.5), Item(9, 2.0), Item(3, 0.5), Item(1, 1.0)}));
  EXPECT_THAT(CellItems(model), ElementsAre(9, 1, 3, 5));
  EXPECT_EQ(model.Cells()[0].place, 1u);
  EXPECT_EQ(model.Cells()[3].place, 4u);
}

TEST(LossModelTest, CandidatesAreMisclassifiedOrLongInTheTop) {
  LossModel model;
  model.SetState(
      State({Item(1, 4, 3, 5), Item(2, 3, 3, 3, 3), Item(3, 2, 3, 3, 2), Item(4, 1, -1, 5, 1)}));
  const std::vector<LossModel::Cell> cells = model.Cells();
  EXPECT_TRUE(cells[0].candidate);
  EXPECT_TRUE(cells[0].misclassified);
  EXPECT_TRUE(cells[1].candidate);  // three epochs in the top
  EXPECT_FALSE(cells[1].misclassified);
  EXPECT_FALSE(cells[2].candidate);
  EXPECT_FALSE(cells[3].candidate);  // unknown label: no verdict
  LossModel strict({.candidate_epochs = 2});
  strict.SetState(State({Item(3, 2, 3, 3, 2)}));
  EXPECT_TRUE(strict.Cells()[0].candidate);
}

TEST(LossModelTest, UpdatesReplaceTheListAndTheTopItemStaysChosen) {
  LossModel model;
  EXPECT_FALSE(model.has_data());
  model.SetState(State({Item(1, 1.0), Item(2, 2.0)}));
  EXPECT_EQ(model.chosen_item(), 2u);  // the top item by default
  EXPECT_TRUE(model.NeedsSnapshots());
  model.SetItemSnapshots(2, {Snapshot(2, 100, {1, 0, 0, 0}, {0, 0, 0, 0})});
  model.SetItemSnapshots(1, {Snapshot(1, 100, {1, 0, 0, 0}, {0, 0, 0, 0})});
  EXPECT_FALSE(model.NeedsSnapshots());
  model.SetState(State({Item(7, 5.0), Item(8, 1.0)}));
  EXPECT_THAT(CellItems(model), ElementsAre(7, 8));
  // The default choice does not jump with the list; its snapshots stay,
  // those of an item that left the list go.
  EXPECT_EQ(model.chosen_item(), 2u);
  EXPECT_EQ(model.ChosenSnapshots().size(), 1u);
  EXPECT_FALSE(model.Choose(1));  // not in the list any more
  EXPECT_TRUE(model.NeedsSnapshots());
  EXPECT_TRUE(model.Choose(8));
  // A new snapshot of the collector keeps the explicit choice.
  model.ClearData();
  EXPECT_FALSE(model.has_data());
  EXPECT_EQ(model.chosen_item(), 8u);
  // Load starts over with the top item.
  LossData data;
  data.state = State({Item(4, 1.0), Item(6, 3.0)});
  model.Load(data);
  EXPECT_EQ(model.chosen_item(), 6u);
}

TEST(LossModelTest, OneColourScaleForEveryMapOfTheItem) {
  LossModel model;
  model.SetMapScaling(MapScaling::kShared);
  model.SetState(State({Item(1, 1.0)}));
  model.SetItemSnapshots(1, {Snapshot(1, 200, {0.5f, 0.25f, 0, 1.0f}, {0.1f, 0, 0, 0}),
                             Snapshot(1, 100, {0, 2.0f, 0, 0}, {0, 0, 0, 0}, 5.0f)});
  std::optional<LossModel::Frame> frame = model.CurrentFrame();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->iteration, 200u);  // the newest
  EXPECT_EQ(frame->count, 2u);
  EXPECT_EQ(frame->index, 1u);
  ASSERT_EQ(frame->columns.size(), 2u);
  EXPECT_EQ(frame->columns[0].layer, "conv1");
  EXPECT_EQ(frame->columns[1].layer, "conv2");
  EXPECT_FLOAT_EQ(frame->columns[0].contribution_max, 1.0f);
  EXPECT_FLOAT_EQ(frame->columns[0].reduction_max, 0.1f);
  EXPECT_FLOAT_EQ(frame->frame_max, 1.0f);
  // The older snapshot's conv2 map holds the item's largest value.
  EXPECT_FLOAT_EQ(frame->scale_max, 5.0f);
  model.SetIterationIndex(0);
  EXPECT_FLOAT_EQ(model.CurrentFrame()->scale_max, 5.0f);
  EXPECT_FLOAT_EQ(model.CurrentFrame()->frame_max, 5.0f);
}

// Issue 23.5: an iteration whose values are 1/1000 of the item's largest
// was blank on the shared linear scale. The default scales each iteration on
// its own maximum; log spans four decades of the shared one.
TEST(LossModelTest, TinyIterationsShowTheirStructureByDefaultAndOnTheLogScale) {
  LossModel model;
  model.SetState(State({Item(1, 1.0)}));
  model.SetItemSnapshots(1, {Snapshot(1, 100, {4.0f, 2.0f, 0, 1.0f}, {0, 0, 0, 0}),
                             Snapshot(1, 200, {0.004f, 0.002f, 0, 0.001f}, {0, 0, 0, 0})});
  EXPECT_EQ(model.map_scaling(), MapScaling::kPerIteration);
  // The distinct colours of conv1's contribution map at the newest (tiny) iteration.
  auto colours = [&model] {
    model.SetMonitoringViewport(1200, 520);
    const DrawList& list = model.DrawMonitoring();
    const RectF where = model.monitoring_geometry().columns.at(0).contribution_rect;
    std::set<Color> distinct;
    for (const PixelImage& image : list.images) {
      if (image.dest.x != where.x || image.dest.y != where.y) continue;
      distinct.insert(image.pixels.begin(), image.pixels.end());
    }
    return distinct.size();
  };
  std::optional<LossModel::Frame> frame = model.CurrentFrame();
  ASSERT_TRUE(frame.has_value());
  EXPECT_FLOAT_EQ(frame->scale_max, 0.004f);
  EXPECT_EQ(colours(), 4u);  // 0, 0.001, 0.002, 0.004: four colours
  model.SetMapScaling(MapScaling::kShared);
  EXPECT_FLOAT_EQ(model.CurrentFrame()->scale_max, 4.0f);
  EXPECT_LE(colours(), 2u);  // all but blank: what the issue saw
  model.SetMapScaling(MapScaling::kLog);
  EXPECT_FLOAT_EQ(model.CurrentFrame()->scale_max, 4.0f);
  EXPECT_EQ(colours(), 4u);
  EXPECT_FLOAT_EQ(loss_drawing::RampPosition(4.0f, 4.0f, MapScaling::kLog), 1.0f);
  EXPECT_FLOAT_EQ(loss_drawing::RampPosition(0.004f, 4.0f, MapScaling::kLog), 0.25f);
  EXPECT_FLOAT_EQ(loss_drawing::RampPosition(0.0f, 4.0f, MapScaling::kLog), 0.0f);
}

TEST(LossModelTest, BrokenMapsAreMissingAndInfinitiesDoNotSetTheScale) {
  LossModel model;
  model.SetMapScaling(MapScaling::kShared);
  model.SetState(State({Item(1, 1.0)}));
  ItemSnapshotRecord s =
      Snapshot(1, 100, {1, std::numeric_limits<float>::infinity(), NAN, 0.5f}, {0, 0, 0, 0});
  s.maps[1].contribution.clear();              // conv2: bytes did not match its size
  s.maps.push_back({"head", 1, 1, {9}, {0}});  // a layer the list did not name
  model.SetItemSnapshots(1, {s});
  std::optional<LossModel::Frame> frame = model.CurrentFrame();
  ASSERT_EQ(frame->columns.size(), 3u);
  EXPECT_TRUE(frame->columns[0].present);
  EXPECT_FALSE(frame->columns[1].present);
  EXPECT_EQ(frame->columns[2].layer, "head");
  EXPECT_FLOAT_EQ(frame->columns[0].contribution_max, 1.0f);
  EXPECT_FLOAT_EQ(frame->scale_max, 9.0f);
}

TEST(LossModelTest, SliderClampsAndFollowsTheNewestUntilMoved) {
  LossModel model;
  model.SetState(State({Item(1, 1.0)}));
  EXPECT_EQ(model.SetIterationIndex(3), 0u);  // no snapshots: nothing to move
  model.SetItemSnapshots(1, {Snapshot(1, 100, {1, 0, 0, 0}, {0, 0, 0, 0}),
                             Snapshot(1, 300, {1, 0, 0, 0}, {0, 0, 0, 0}),
                             Snapshot(1, 200, {1, 0, 0, 0}, {0, 0, 0, 0})});
  EXPECT_EQ(model.SetIterationIndex(-4), 0u);
  EXPECT_EQ(model.CurrentFrame()->iteration, 100u);
  EXPECT_EQ(model.SetIterationIndex(99), 2u);
  EXPECT_TRUE(model.following_newest());
  model.AddSnapshot(Snapshot(1, 400, {1, 0, 0, 0}, {0, 0, 0, 0}));  // live, "<job>/maps"
  EXPECT_EQ(model.CurrentFrame()->iteration, 400u);
  EXPECT_EQ(model.SetIterationIndex(1), 1u);
  EXPECT_FALSE(model.following_newest());
  model.AddSnapshot(Snapshot(1, 500, {1, 0, 0, 0}, {0, 0, 0, 0}));
  EXPECT_EQ(model.CurrentFrame()->iteration, 200u);  // pinned on its iteration
  EXPECT_EQ(model.CurrentFrame()->count, 5u);
  EXPECT_FALSE(model.SetIteration(250));
  EXPECT_TRUE(model.SetIteration(300));
  EXPECT_EQ(model.CurrentFrame()->index, 2u);
  model.FollowNewest();
  EXPECT_EQ(model.CurrentFrame()->iteration, 500u);
}

TEST(LossModelTest, LiveSnapshotsAreKeptForTheChosenAndFetchedItemsOnly) {
  LossModel model({.max_snapshots_per_item = 3});
  model.SetState(State({Item(1, 2.0), Item(2, 1.0), Item(3, 0.5)}));
  model.AddSnapshot(Snapshot(1, 100, {1, 0, 0, 0}, {0, 0, 0, 0}));  // chosen
  model.AddSnapshot(Snapshot(2, 100, {1, 0, 0, 0}, {0, 0, 0, 0}));  // neither: dropped
  model.SetItemSnapshots(3, {});
  model.AddSnapshot(Snapshot(3, 100, {1, 0, 0, 0}, {0, 0, 0, 0}));  // fetched
  EXPECT_EQ(model.ChosenSnapshots().size(), 1u);
  // The source's answer merges with what arrived live meanwhile.
  model.SetItemSnapshots(1, {Snapshot(1, 50, {1, 0, 0, 0}, {0, 0, 0, 0}),
                             Snapshot(1, 100, {2, 0, 0, 0}, {0, 0, 0, 0})});
  ASSERT_EQ(model.ChosenSnapshots().size(), 2u);
  EXPECT_EQ(model.ChosenSnapshots()[1].maps[0].contribution[0], 2.0f);
  model.Choose(2);
  EXPECT_TRUE(model.ChosenSnapshots().empty());
  model.Choose(3);
  EXPECT_EQ(model.ChosenSnapshots().size(), 1u);
  for (uint64_t it = 200; it <= 600; it += 100) {
    model.AddSnapshot(Snapshot(3, it, {1, 0, 0, 0}, {0, 0, 0, 0}));
  }
  ASSERT_EQ(model.ChosenSnapshots().size(), 3u);  // bounded: the oldest go
  EXPECT_EQ(model.ChosenSnapshots().front().iteration, 400u);
}

TEST(LossModelTest, SelectionLayoutPlacesEveryCellAndHitsIt) {
  LossModel model;
  std::vector<DifficultItemRecord> items;
  for (uint64_t i = 0; i < 32; ++i) {
    items.push_back(Item(100 + i, 32.0 - static_cast<double>(i), 1, i % 5 == 0 ? 2 : 1));
  }
  model.SetState(State(items));
  model.SetSelectionViewport(1400, 700);
  const DrawList& list = model.DrawSelection();
  const std::vector<LossModel::Cell>& cells = model.cell_geometry();
  ASSERT_EQ(cells.size(), 32u);
  EXPECT_EQ(list.images.size(), 32u);  // one thumbnail each
  for (size_t i = 0; i < cells.size(); ++i) {
    const RectF r = cells[i].rect;
    EXPECT_GE(r.x, 0);
    EXPECT_LE(r.x + r.w, 1400);
    EXPECT_LE(r.y + r.h, 700) << i;
    EXPECT_GE(cells[i].thumb_rect.w, 16) << "thumbnails too small to see";
    EXPECT_EQ(std::fmod(cells[i].thumb_rect.w, 2.0f), 0.0f) << "not a whole multiple";
    EXPECT_EQ(model.ItemAt(r.x + r.w / 2, r.y + r.h / 2), cells[i].item);
    for (size_t j = 0; j < i; ++j) {
      const RectF o = cells[j].rect;
      EXPECT_FALSE(r.x < o.x + o.w && o.x < r.x + r.w && r.y < o.y + o.h && o.y < r.y + r.h);
    }
  }
  EXPECT_FALSE(model.ItemAt(1399, 699).has_value());
  EXPECT_NE(model.TooltipAt(cells[0].rect.x + 5, cells[0].rect.y + 5).find("item 100"),
            std::string::npos);
  // Candidates (every fifth: label 1, prediction 2) get a red frame.
  size_t red = 0;
  for (const FilledRect& r : list.backgrounds) red += r.fill == LossModel::kCandidateColor;
  EXPECT_EQ(red, 1u + 7u);  // the legend's swatch and items 0, 5, ..., 30
}

TEST(LossModelTest, ACrowdedGridKeepsReadableThumbnailsAndScrolls) {
  LossModel model;
  std::vector<DifficultItemRecord> items;
  for (uint64_t i = 0; i < 32; ++i) items.push_back(Item(i, 32.0 - static_cast<double>(i)));
  for (DifficultItemRecord& item : items) item.input = {8, 8, 1, std::vector<uint8_t>(64, 200)};
  model.SetState(State(items));
  model.SetSelectionViewport(1100, 300);
  model.DrawSelection();
  const std::vector<LossModel::Cell>& cells = model.cell_geometry();
  ASSERT_EQ(cells.size(), 32u);
  EXPECT_EQ(cells[0].thumb_rect.w, 32);         // whole multiples of 8, not below 32
  EXPECT_EQ(cells[7].rect.y, cells[0].rect.y);  // as many columns as the text allows
  EXPECT_GT(cells[8].rect.y, cells[0].rect.y);
  EXPECT_GT(model.selection_content_height(), 300);
  EXPECT_GE(model.selection_content_height(), cells.back().rect.y + cells.back().rect.h);
  model.SetSelectionViewport(1100, 1400);  // room enough: no scrolling
  model.DrawSelection();
  EXPECT_LE(model.selection_content_height(), 1400);
}

TEST(LossModelTest, MonitoringLayoutPutsCAboveRInOneColumnPerLayer) {
  LossModel model;
  model.SetState(State({Item(1, 1.0)}));
  model.SetItemSnapshots(1, {Snapshot(1, 100, {0, 1, 0, 0}, {0, 0, 1, 0})});
  model.SetMonitoringViewport(1200, 500);
  const DrawList& list = model.DrawMonitoring();
  const LossModel::MonitoringGeometry& g = model.monitoring_geometry();
  ASSERT_EQ(g.columns.size(), 2u);
  for (const LossModel::Column& column : g.columns) {
    EXPECT_LT(column.contribution_rect.y + column.contribution_rect.h, column.reduction_rect.y);
    EXPECT_FLOAT_EQ(column.contribution_rect.x, column.reduction_rect.x);
    EXPECT_GT(column.contribution_rect.w, 100) << column.layer;
  }
  EXPECT_LT(g.columns[0].contribution_rect.x, g.columns[1].contribution_rect.x);
  EXPECT_LT(g.input_rect.x + g.input_rect.w, g.columns[0].contribution_rect.x);
  EXPECT_GT(g.colorbar_contribution.x, g.columns[1].contribution_rect.x);
  // Input, 2 x (C, R), 2 colour-bar strips.
  EXPECT_EQ(list.images.size(), 7u);
  // The largest value is the darkest red; zero is white.
  EXPECT_EQ(list.images[1].pixels[1], LossModel::ContributionColor(1));
  EXPECT_EQ(list.images[1].pixels[0], Rgba(255, 255, 255));
  EXPECT_EQ(list.images[2].pixels[2], LossModel::ReductionColor(1));
}

TEST(LossModelTest, WithoutDataBothViewsSaySoAndHowToGetSome) {
  LossModel model;
  for (const DrawList* list : {&model.DrawSelection(), &model.DrawMonitoring()}) {
    bool found = false;
    for (const Text& text : list->texts) found = found || text.text == LossModel::kNoDataText;
    EXPECT_TRUE(found);
    EXPECT_TRUE(list->images.empty());
  }
}

TEST(LossModelTest, RampsRunFromWhiteToDarkAndStayOrdered) {
  for (auto ramp : {&LossModel::ContributionColor, &LossModel::ReductionColor}) {
    EXPECT_EQ(ramp(0), Rgba(255, 255, 255));
    int previous = 3 * 255 + 1;
    for (float t = 0; t <= 1.0f; t += 0.05f) {
      const Color c = ramp(t);
      const int sum = static_cast<int>(((c >> 16) & 0xFF) + ((c >> 8) & 0xFF) + (c & 0xFF));
      EXPECT_LT(sum, previous) << t;  // darker as t grows: the order reads at a glance
      previous = sum;
    }
  }
}

TEST(LossModelTest, ADifficultItemAlertNamesItsItem) {
  Alert alert;
  alert.rule = "difficult_item";
  alert.text = "item 1432 (label 3, predicted 5, rank 2) has been in the top 32 ...";
  EXPECT_FALSE(LossModel::ItemOfAlert(alert).has_value());  // the item field, not the text
  alert.item = 1432;
  EXPECT_EQ(LossModel::ItemOfAlert(alert), 1432u);
  alert.rule = "straggler";
  EXPECT_FALSE(LossModel::ItemOfAlert(alert).has_value());
}

}  // namespace
}  // namespace trainscope::viewer
