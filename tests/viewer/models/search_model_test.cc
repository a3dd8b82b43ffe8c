#include "trainscope/viewer/search_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainscope::viewer {
namespace {

using Kind = SearchModel::Query::Kind;

// Steps 1..`steps` of 1 ms on `ranks` devices; each step on each device runs
// aten::conv2d twice (the second on rank r starting r us later), then
// aten::convolution_backward once, then an allreduce; a raw clock 5 us ahead
// on rank 1.
class SearchModelTest : public ::testing::Test {
 protected:
  void SetUp() override { AddSteps(1, 10); }

  void AddSteps(uint64_t first, uint64_t last) {
    std::vector<OperatorRecord> ops;
    for (uint64_t step = first; step <= last; ++step) {
      const int64_t base = static_cast<int64_t>(step) * 1'000'000;
      for (uint32_t r = 0; r < kRanks; ++r) {
        const int64_t skew = r * 1000;
        ops.push_back(Op(r, base, base + 100'000, "aten::conv2d", step));
        ops.push_back(Op(r, base + 200'000 + skew, base + 300'000 + skew, "aten::conv2d", step));
        ops.push_back(Op(r, base + 400'000, base + 600'000, "aten::convolution_backward", step));
        OperatorRecord ar = Op(r, base + 700'000, base + 900'000, "allreduce", step);
        ar.op_class = OpClass::kCollective;
        ar.group = names_.Intern("dp_group");  // a name no operator has
        ar.group_sequence = step;
        ops.push_back(ar);
      }
      StepRecord record;
      record.step = step;
      record.start_ns = base;
      record.end_ns = base + 1'000'000;
      for (uint32_t r = 0; r < kRanks; ++r) {
        DeviceStepRecord device;
        device.rank = r;
        record.devices.push_back(device);
      }
      marey_.AddStep(record);
    }
    marey_.AddOperators(ops);
  }

  OperatorRecord Op(uint32_t rank, int64_t start, int64_t end, const std::string& name,
                    uint64_t step) {
    OperatorRecord op;
    op.rank = rank;
    op.start_ns = start;
    op.end_ns = end;
    op.raw_start_ns = start + (rank == 1 ? 5000 : 0);
    op.raw_end_ns = end + (rank == 1 ? 5000 : 0);
    op.name = names_.Intern(name);
    op.step = step;
    return op;
  }

  static constexpr uint32_t kRanks = 3;
  NameTable names_;
  MareyModel marey_{&names_};
  SearchModel search_{&names_, &marey_.store()};
  SelectionState selection_;
};

TEST_F(SearchModelTest, ParsesStepsRanksAndOperatorNames) {
  EXPECT_EQ(SearchModel::Parse("").kind, Kind::kNone);
  EXPECT_EQ(SearchModel::Parse("   ").kind, Kind::kNone);
  for (const char* text : {"step 120", "Step120", "#120", " 120 ", "STEP  120"}) {
    const SearchModel::Query q = SearchModel::Parse(text);
    EXPECT_EQ(q.kind, Kind::kStep) << text;
    EXPECT_EQ(q.number, 120u) << text;
  }
  for (const char* text : {"rank 3", "r3", "R 3", "Rank3"}) {
    const SearchModel::Query q = SearchModel::Parse(text);
    EXPECT_EQ(q.kind, Kind::kRank) << text;
    EXPECT_EQ(q.number, 3u) << text;
  }
  // Anything else is a name, matched in lower case: "relu" is not a rank,
  // "step" alone not a step, an over-long number not a step.
  for (const char* text :
       {"aten::ReLU", "relu", "step", "rank", "#", "r3x", "conv 2", "99999999999999999999999"}) {
    EXPECT_EQ(SearchModel::Parse(text).kind, Kind::kOperator) << text;
  }
  EXPECT_EQ(SearchModel::Parse("  Aten::ReLU ").text, "aten::relu");
}

TEST_F(SearchModelTest, ListsEveryMatchingNameWithItsCountsMostFirst) {
  search_.SetQuery("CONV");  // case-insensitive substring
  ASSERT_EQ(search_.results().size(), 2u);
  const SearchModel::Result& conv = search_.results()[0];
  EXPECT_EQ(conv.label, "aten::conv2d");
  EXPECT_EQ(conv.matches, 2u * kRanks * 10);
  EXPECT_EQ(conv.ranks, kRanks);
  EXPECT_EQ(SearchModel::ResultText(conv), "aten::conv2d \xE2\x80\x94 60 matches on 3 ranks");
  EXPECT_EQ(search_.results()[1].label, "aten::convolution_backward");
  EXPECT_EQ(search_.results()[1].matches, 30u);
  EXPECT_EQ(search_.active(), 0u);
  EXPECT_EQ(search_.Summary(), "2 names, 90 matches \xC2\xB7 Enter or F3: next");
  // Thousands are grouped; one of a kind is singular.
  SearchModel::Result big = conv;
  big.matches = 4812;
  big.ranks = 1;
  EXPECT_EQ(SearchModel::ResultText(big), "aten::conv2d \xE2\x80\x94 4,812 matches on 1 rank");
}

TEST_F(SearchModelTest, ANameNoOperatorCarriesIsNoResult) {
  search_.SetQuery("dp_group");  // interned as a group, never an operator's name
  EXPECT_TRUE(search_.results().empty());
  EXPECT_EQ(search_.Summary(), "no operator, step or rank matches \"dp_group\"");
  EXPECT_FALSE(search_.Jump(1, &selection_, &marey_));
  EXPECT_FALSE(selection_.selected_step().has_value());
}

TEST_F(SearchModelTest, F3WalksTheMatchesInTimeOrderAndWraps) {
  search_.SetQuery("convolution_backward");
  // Steps 1..10, three devices each starting together: by time, then rank.
  std::vector<std::pair<uint64_t, uint32_t>> seen;
  for (int i = 0; i < 30; ++i) {
    std::optional<SearchModel::Match> m = search_.Step(1);
    ASSERT_TRUE(m.has_value());
    seen.push_back({m->step, m->rank});
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].first, 1 + i / kRanks) << i;
    EXPECT_EQ(seen[i].second, i % kRanks) << i;
  }
  // Past the last: back to the first; Shift+F3 from there: the last.
  EXPECT_EQ(search_.Step(1)->step, 1u);
  EXPECT_EQ(search_.current(), 0u);
  std::optional<SearchModel::Match> last = search_.Step(-1);
  EXPECT_EQ(last->step, 10u);
  EXPECT_EQ(last->rank, kRanks - 1);
  EXPECT_EQ(search_.Step(-1)->rank, kRanks - 2);
  EXPECT_EQ(search_.Summary(),
            "match 29 of 30 \xC2\xB7 aten::convolution_backward \xC2\xB7 step 10, rank 1");
}

TEST_F(SearchModelTest, JumpPinsTheStepSelectsTheDeviceAndZoomsTheMareyGraphToTheOperator) {
  marey_.SetViewport(1200, 600);
  marey_.ResetZoom();
  marey_.Draw();
  const int64_t whole = marey_.view_end() - marey_.view_start();
  search_.SetQuery("aten::conv2d");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(search_.Jump(1, &selection_, &marey_));
  // The fifth match by time: step 1's second conv2d on rank 1 (0.201 ms in).
  const SearchModel::Match& m = search_.matches()[*search_.current()];
  EXPECT_EQ(m.step, 1u);
  EXPECT_EQ(m.rank, 1u);
  EXPECT_EQ(m.start_ns, 1'201'000);
  EXPECT_EQ(selection_.selected_step(), 1u);
  EXPECT_FALSE(selection_.following());
  EXPECT_EQ(selection_.selected_ranks(), std::set<uint32_t>({1}));
  marey_.Draw();
  EXPECT_LT(marey_.view_end() - marey_.view_start(), whole / 20);
  EXPECT_LE(marey_.view_start(), m.start_ns);
  EXPECT_GE(marey_.view_end(), m.end_ns);
  // Outlined in red on its device only.
  const DrawList& list = marey_.Draw();
  ASSERT_FALSE(list.overlay_rects.empty());
  bool outlined = false;
  const float row_y = marey_.Rows()[1].axis_y;
  for (const FilledRect& r : list.overlay_rects) {
    if (r.stroke != kAlertColor) continue;  // not an outline
    EXPECT_TRUE(r.rect.y <= row_y && r.rect.y + r.rect.h >= row_y) << "outline off rank 1";
    if (r.rect.x <= marey_.TimeToX(m.start_ns) && r.rect.x + r.rect.w >= marey_.TimeToX(m.end_ns))
      outlined = true;
  }
  EXPECT_TRUE(outlined);
}

TEST_F(SearchModelTest, JumpUsesTheDeviceClockWhenTheGraphShowsRawTimestamps) {
  marey_.SetViewport(1200, 600);
  marey_.SetRawTimestamps(true);
  search_.SetQuery("convolution_backward");
  search_.Jump(1, &selection_, &marey_);
  search_.Jump(1, &selection_, &marey_);  // step 1, rank 1: 5 us ahead on its clock
  const SearchModel::Match& m = search_.matches()[*search_.current()];
  ASSERT_EQ(m.rank, 1u);
  EXPECT_EQ(m.raw_start_ns, m.start_ns + 5000);
  marey_.Draw();
  // Centred on the raw extent: 0.2 ms padded by 0.2 ms on each side.
  EXPECT_EQ(marey_.view_start(), m.raw_start_ns - 200'000);
  EXPECT_EQ(marey_.view_end(), m.raw_end_ns + 200'000);
}

TEST_F(SearchModelTest, AStepIsPinnedAndShownWithTheStepsAroundIt) {
  search_.SetQuery("#7");
  ASSERT_EQ(search_.results().size(), 1u);
  EXPECT_TRUE(search_.results()[0].found);
  EXPECT_EQ(search_.Summary(), "step 7 \xE2\x80\x94 3 ranks, 1.00 ms");
  marey_.SetViewport(1200, 600);
  ASSERT_TRUE(search_.Jump(1, &selection_, &marey_));
  EXPECT_EQ(selection_.selected_step(), 7u);
  EXPECT_EQ(marey_.time_window().mode(), MareyTimeWindow::Mode::kAroundStep);
  marey_.Draw();
  EXPECT_LE(marey_.view_start(), 7'000'000);
  EXPECT_GE(marey_.view_end(), 8'000'000);

  search_.SetQuery("step 99");
  EXPECT_FALSE(search_.results()[0].found);
  EXPECT_EQ(SearchModel::ResultText(search_.results()[0]), "no step 99");
  EXPECT_EQ(search_.Summary(),
            "no step 99 (steps 1\xE2\x80\x93"
            "10)");
  EXPECT_FALSE(search_.Jump(1, &selection_, &marey_));
  EXPECT_EQ(selection_.selected_step(), 7u);  // unchanged
}

TEST_F(SearchModelTest, ARankIsSelectedAndItsRowsHighlighted) {
  marey_.SetDevices({{0, 0, "host-a"}, {1, 0, "host-a"}, {2, 0, "host-b"}});
  search_.SetQuery("rank 2");
  ASSERT_EQ(search_.results().size(), 1u);
  EXPECT_EQ(search_.Summary(), "rank 2 (host-b) \xE2\x80\x94 40 operators");
  marey_.SetViewport(1200, 600);
  marey_.SetTimeRange(1'000'000, 3'000'000);
  const size_t backgrounds = marey_.Draw().backgrounds.size();
  ASSERT_TRUE(search_.Jump(1, &selection_, &marey_));
  EXPECT_EQ(selection_.selected_ranks(), std::set<uint32_t>({2}));
  EXPECT_FALSE(selection_.selected_step().has_value());  // a rank pins no step
  const DrawList& list = marey_.Draw();
  ASSERT_EQ(list.backgrounds.size(), backgrounds + 1);  // its row's highlight
  const float row_y = marey_.Rows()[2].axis_y;
  const RectF& band = list.backgrounds.back().rect;
  EXPECT_TRUE(band.y <= row_y && band.y + band.h >= row_y);
  EXPECT_EQ(marey_.view_start(), 1'000'000);  // not zoomed

  search_.SetQuery("r7");
  EXPECT_EQ(search_.Summary(),
            "no rank 7 (ranks 0\xE2\x80\x93"
            "2)");
  EXPECT_FALSE(search_.Jump(1, &selection_, &marey_));
}

TEST_F(SearchModelTest, ALiveJobsNewOperatorsAreFoundOnTheNextJumpFromWhereItWas) {
  search_.SetQuery("convolution_backward");
  for (int i = 0; i < 30; ++i) search_.Step(1);  // the last match: step 10, rank 2
  EXPECT_EQ(search_.results()[0].matches, 30u);
  AddSteps(11, 12);  // the job goes on
  // The next jump finds step 11's first instead of wrapping to step 1.
  std::optional<SearchModel::Match> next = search_.Step(1);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->step, 11u);
  EXPECT_EQ(next->rank, 0u);
  EXPECT_EQ(search_.results()[0].matches, 36u);
  EXPECT_EQ(search_.matches().size(), 36u);
}

TEST_F(SearchModelTest, ChoosingAnotherResultWalksItsMatches) {
  search_.SetQuery("conv");
  search_.Step(1);
  const uint64_t version = search_.version();
  search_.SetActive(1);  // aten::convolution_backward
  EXPECT_GT(search_.version(), version);
  EXPECT_FALSE(search_.current().has_value());
  std::optional<SearchModel::Match> m = search_.Step(1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(names_.Name(m->name), "aten::convolution_backward");
  EXPECT_EQ(m->start_ns, 1'400'000);
  search_.SetActive(7);  // no such result: ignored
  EXPECT_EQ(search_.active(), 1u);
}

TEST_F(SearchModelTest, ManyMatchingNamesAreCountedButOnlyTheFirstListed) {
  std::vector<OperatorRecord> ops;
  const size_t names = SearchModel::kMaxResults + 50;
  for (size_t i = 0; i < names; ++i) {
    // op_0 has the most operators, so it comes first.
    for (size_t k = 0; k <= (i == 0 ? 3 : 0); ++k) {
      ops.push_back(Op(0, 50'000'000 + static_cast<int64_t>(i * 10 + k) * 1000,
                       50'000'000 + static_cast<int64_t>(i * 10 + k) * 1000 + 500,
                       "op_" + std::to_string(i), 20));
    }
  }
  marey_.AddOperators(ops);
  search_.SetQuery("OP_");
  EXPECT_EQ(search_.results().size(), SearchModel::kMaxResults);
  EXPECT_EQ(search_.more_results(), 50u);
  EXPECT_EQ(search_.results()[0].label, "op_0");
  EXPECT_EQ(search_.results()[0].matches, 4u);
  EXPECT_EQ(search_.Summary(), "250 names, 253 matches (200 listed) \xC2\xB7 Enter or F3: next");
}

TEST_F(SearchModelTest, AClearedQueryHasNoResultsAndNothingToJumpTo) {
  search_.SetQuery("conv");
  search_.Clear();
  EXPECT_EQ(search_.query().kind, Kind::kNone);
  EXPECT_TRUE(search_.results().empty());
  EXPECT_EQ(search_.Summary(), "");
  EXPECT_FALSE(search_.Jump(1, &selection_, &marey_));
}

}  // namespace
}  // namespace trainscope::viewer
