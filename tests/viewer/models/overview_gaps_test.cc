// The overview across a feed outage (ConnectionModel's outages handed over as
// OverviewModel::Gap): the lines break there and a band marks it.
#include <gtest/gtest.h>

#include <utility>

#include "trainscope/viewer/overview_model.h"

namespace trainscope::viewer {
namespace {

constexpr int64_t kMs = 1'000'000;

StepRecord Step(uint64_t number, int64_t start_ns) {
  StepRecord step;
  step.step = number;
  step.start_ns = start_ns;
  step.end_ns = start_ns + 90 * kMs;
  for (uint32_t r = 0; r < 2; ++r) {
    DeviceStepRecord d;
    d.rank = r;
    d.start_ns = step.start_ns;
    d.end_ns = step.end_ns;
    d.step_time_ns = 90 * kMs;
    d.collective_ns = 10 * kMs;
    d.wait_ns = 2 * kMs;
    step.devices.push_back(d);
  }
  return step;
}

// Steps 1..3 every 100 ms, then (the collector was down 40 s) steps 400..402.
OverviewModel WithOutage() {
  OverviewModel overview;
  for (uint64_t s = 1; s <= 3; ++s) overview.AddStep(Step(s, static_cast<int64_t>(s) * 100 * kMs));
  for (uint64_t s = 400; s <= 402; ++s) {
    overview.AddStep(Step(s, 40'000 * kMs + static_cast<int64_t>(s) * 100 * kMs));
  }
  overview.SetViewport(1200, 800);
  return overview;
}

size_t CountBand(const DrawList& list) {
  size_t bands = 0;
  for (const FilledRect& rect : list.backgrounds) bands += rect.fill == OverviewModel::kGapColor;
  return bands;
}

TEST(OverviewGapsTest, WithoutAGapTheLinesRunThrough) {
  OverviewModel overview = WithOutage();
  const DrawList& list = overview.Draw();
  // Two device lines, the communication and the wait line: one polyline each.
  EXPECT_EQ(list.polylines.size(), 4u);
  EXPECT_EQ(CountBand(list), 0u);
}

TEST(OverviewGapsTest, AnOutageBreaksEveryLineAndIsMarked) {
  OverviewModel overview = WithOutage();
  overview.SetGaps({{.start_ns = 400 * kMs, .end_ns = 40'000 * kMs}});
  const DrawList& list = overview.Draw();
  ASSERT_EQ(list.polylines.size(), 8u);  // each line in two pieces
  // No piece spans the outage: each lies wholly on one side of it.
  float left_end = 0, right_start = 1e9f;
  for (const Polyline& line : list.polylines) {
    ASSERT_FALSE(line.points.empty());
    const float first = line.points.front().x, last = line.points.back().x;
    const bool before = last < 600, after = first > 600;
    EXPECT_TRUE(before || after) << "a line runs across the outage: " << first << ".." << last;
    if (before) left_end = std::max(left_end, last);
    if (after) right_start = std::min(right_start, first);
  }
  ASSERT_EQ(CountBand(list), 1u);
  for (const FilledRect& rect : list.backgrounds) {
    if (rect.fill != OverviewModel::kGapColor) continue;
    EXPECT_NEAR(rect.rect.x, left_end, 1.0f);  // from step 3 ...
    EXPECT_NEAR(rect.rect.x + rect.rect.w, right_start, 1.0f);  // ... to step 400
  }
}

TEST(OverviewGapsTest, AnOngoingOutageAfterTheNewestStepGreysTheChartAndBreaksNothing) {
  OverviewModel overview = WithOutage();
  const auto stale = [&] {
    size_t greyed = 0;
    for (const FilledRect& rect : overview.Draw().backgrounds) {
      greyed += rect.fill == OverviewModel::kStaleColor;
    }
    bool said = false;
    for (const Text& text : overview.Draw().texts) {
      said = said || text.text.rfind("no feed since step 402", 0) == 0;
    }
    return std::make_pair(greyed, said);
  };
  EXPECT_EQ(stale(), std::make_pair(size_t{0}, false));
  overview.SetGaps({{.start_ns = 100'000 * kMs, .end_ns = 0}});  // after step 402 ended
  EXPECT_EQ(overview.Draw().polylines.size(), 4u);
  EXPECT_EQ(CountBand(overview.Draw()), 0u);
  EXPECT_EQ(stale(), std::make_pair(size_t{1}, true));
  // Over: the chart is live again.
  overview.SetGaps({{.start_ns = 100'000 * kMs, .end_ns = 140'000 * kMs}});
  EXPECT_EQ(stale(), std::make_pair(size_t{0}, false));
}

TEST(OverviewGapsTest, AnOutageBetweenStepsThatHadNoneBetweenThemIsNotMarkedElsewhere) {
  OverviewModel overview = WithOutage();
  // The outage fell between steps 1 and 2 (e.g. a short one): only there.
  overview.SetGaps({{.start_ns = 195 * kMs, .end_ns = 198 * kMs}});
  EXPECT_EQ(overview.Draw().polylines.size(), 8u);
  EXPECT_EQ(CountBand(overview.Draw()), 1u);
}

}  // namespace
}  // namespace trainscope::viewer
