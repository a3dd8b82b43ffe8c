#include "trainscope/viewer/marey_axes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace trainscope::viewer {
namespace {

std::map<uint64_t, StepRecord> Steps(uint64_t count) {
  std::map<uint64_t, StepRecord> steps;
  for (uint64_t s = 1; s <= count; ++s) {
    const int64_t start = static_cast<int64_t>(s - 1) * 1'000'000;
    steps[s] = StepRecord{s, start, start + 1'000'000, {}};
  }
  return steps;
}

MareyView View(int64_t start, int64_t end) {
  MareyView view;
  view.Resize(1000, 600);
  view.start = start;
  view.end = end;
  return view;
}

std::vector<const Text*> BelowThePlot(const DrawList& list, const MareyView& view) {
  std::vector<const Text*> out;
  const float bottom = view.plot.y + view.plot.h;
  for (const Text& text : list.texts) {
    if (text.y > bottom && text.y < bottom + 20) out.push_back(&text);
  }
  return out;
}

TEST(MareyAxesTest, FewStepsAreNumberedTintedAndTicked) {
  const auto steps = Steps(100);
  const MareyView view = View(47'000'000, 52'000'000);  // steps 48..52
  DrawList list;
  EXPECT_EQ(MareyAxes::AddStepAxis(view, steps, &list), 5u);
  std::set<std::string> labels;
  for (const Text* text : BelowThePlot(list, view)) labels.insert(text->text);
  EXPECT_EQ(labels, (std::set<std::string>{"48", "49", "50", "51", "52", "step"}));
  // Odd steps tinted, a tick at each step's start.
  size_t tints = 0;
  for (const FilledRect& r : list.backgrounds) tints += r.fill == MareyAxes::kStepTintColor;
  EXPECT_GE(tints, 2u);
  const float x = view.TimeToX(49'000'000);
  EXPECT_TRUE(std::any_of(list.lines.begin(), list.lines.end(),
                          [&](const Line& line) { return std::fabs(line.a.x - x) < 0.5f; }));
}

TEST(MareyAxesTest, AWholeRunThinsLabelsAndDrawsNoBoundaries) {
  const auto steps = Steps(2000);
  const MareyView view = View(0, 2'000'000'000);
  DrawList list;
  EXPECT_GE(MareyAxes::AddStepAxis(view, steps, &list), 1990u);
  EXPECT_TRUE(list.backgrounds.empty());
  EXPECT_TRUE(list.lines.empty());
  std::vector<float> xs;
  for (const Text* text : BelowThePlot(list, view)) {
    if (text->text != "step") xs.push_back(text->x);
  }
  ASSERT_GE(xs.size(), 3u);
  std::sort(xs.begin(), xs.end());
  for (size_t i = 1; i < xs.size(); ++i) EXPECT_GE(xs[i] - xs[i - 1], 40.0f);
}

TEST(MareyAxesTest, TheRawClocksHaveNoStepAxisAndTheTimeAxisSaysSo) {
  const auto steps = Steps(10);
  MareyView view = View(0, 10'000'000);
  view.raw = true;
  DrawList list;
  EXPECT_EQ(MareyAxes::AddStepAxis(view, steps, &list), 0u);
  EXPECT_TRUE(list.texts.empty());
  MareyAxes::AddTimeAxis(view, 0, {.devices = 4, .operators = 10, .bins = 100}, &list);
  bool clock = false, summary = false;
  for (const Text& text : list.texts) {
    clock = clock || text.text.find("raw device clocks") != std::string::npos;
    summary = summary || text.text.find("4 devices") != std::string::npos;
  }
  EXPECT_TRUE(clock);
  EXPECT_TRUE(summary);
}

}  // namespace
}  // namespace trainscope::viewer
