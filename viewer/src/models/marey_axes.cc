#include "trainscope/viewer/marey_axes.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "trainscope/viewer/marey_line_charts.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {

void MareyAxes::AddTimeAxis(const MareyView& view, int64_t origin, const Summary& summary,
                            DrawList* list) {
  const double from = static_cast<double>(view.start - origin);
  const double to = static_cast<double>(view.end - origin);
  const int max_ticks = std::max(2, static_cast<int>(view.plot.w / 110));
  for (double tick : NiceTicks(from, to, max_ticks)) {
    const float x = view.TimeToX(origin + static_cast<int64_t>(tick));
    if (x < view.plot.x - 0.5f || x > view.plot.x + view.plot.w + 0.5f) continue;
    list->lines.push_back({{x, view.plot.y}, {x, view.plot.y + view.plot.h}, kGridColor, 1});
    list->lines.push_back({{x, view.plot.y - 5}, {x, view.plot.y}, kAxisColor, 1});
    list->texts.push_back(
        {x, view.plot.y - 13, FormatDuration(tick), kTextColor, Text::Align::kCenter});
  }
  const std::string clock = view.raw ? "raw device clocks" : "aligned clock";
  list->texts.push_back({view.plot.x, 34,
                         "time since the first operator (" + clock + "), showing " +
                             FormatDuration(static_cast<double>(view.end - view.start)),
                         kAxisColor, Text::Align::kLeft});
  char line[160];
  std::snprintf(line, sizeof(line), "%zu devices \xC2\xB7 %zu operators \xC2\xB7 %u bins",
                summary.devices, summary.operators, summary.bins);
  list->texts.push_back(
      {static_cast<float>(view.width) - 12, 14, line, kAxisColor, Text::Align::kRight});
  // Pixel map headers.
  const char* headers[] = {"FLOP", "FLOP/s", "mem"};
  for (int c = 0; c < 3; ++c) {
    const float x = view.PixelMapX(c) + MareyView::kPixelMapColumn * 0.5f;
    list->texts.push_back(
        {x, view.plot.y - 22, headers[c], kTextColor, Text::Align::kCenter, false, 7, true});
  }
}

size_t MareyAxes::AddStepAxis(const MareyView& view, const std::map<uint64_t, StepRecord>& steps,
                              DrawList* list) {
  if (steps.empty() || view.raw) return 0;
  const float left = view.plot.x;
  const float right = view.plot.x + view.plot.w;
  const float bottom = view.plot.y + view.plot.h;
  // The steps in view (steps are in time order), walked in from the newest
  // end, where a followed view is: a map's iterators step one node at a
  // time, so bisecting it walked the whole run three times per frame.
  auto last = steps.end();
  while (last != steps.begin() && std::prev(last)->second.start_ns > view.end) --last;
  auto first = last;
  size_t visible = 0;
  while (first != steps.begin() && std::prev(first)->second.end_ns >= view.start) {
    --first;
    ++visible;
  }
  if (visible == 0) return 0;
  // Label every k-th step (k = 1, 2, 5, 10, ...) so labels never overlap;
  // boundaries only while steps are wider than a few pixels, so a whole
  // run does not turn grey with lines.
  const float per_step = view.plot.w / static_cast<float>(visible);
  uint64_t every = 1;
  for (uint64_t decade = 1; decade < 1'000'000'000; decade *= 10) {
    for (uint64_t m : {1, 2, 5}) {
      every = m * decade;
      if (per_step * static_cast<float>(every) >= 56) break;
    }
    if (per_step * static_cast<float>(every) >= 56) break;
  }
  const bool boundaries = per_step >= kMinBoundaryStepPx;
  size_t shown = 0;
  for (auto it = first; it != last; ++it) {
    const StepRecord& step = it->second;
    const float start_x = view.TimeToX(step.start_ns);
    const float end_x = view.TimeToX(step.end_ns);
    const float x0 = std::max(left, start_x);
    const float x1 = std::min(right, end_x);
    if (boundaries && x1 > x0) {
      // Alternate steps lightly tinted: where one step ends and the next
      // begins reads at a glance, under the bands.
      if (it->first % 2 == 1) {
        list->backgrounds.push_back({{x0, view.plot.y, x1 - x0, view.plot.h}, kStepTintColor});
      }
      if (start_x >= left) {
        list->lines.push_back({{x0, bottom}, {x0, bottom + 5}, kAxisColor, 1});
      }
    }
    // A step is numbered (and counted) where its middle is in view, not
    // for the sliver of a neighbour at the edge.
    const float centre = (start_x + end_x) / 2;
    if (centre < left || centre > right) continue;
    ++shown;
    if (it->first % every == 0) {
      list->texts.push_back(
          {centre, bottom + 13, std::to_string(it->first), kStepLabelColor, Text::Align::kCenter});
    }
  }
  list->texts.push_back({left - 20, bottom + 13, "step", kStepLabelColor, Text::Align::kRight});
  return shown;
}

void MareyAxes::AddLegend(const MareyView& view, DrawList* list) {
  const float legend_y = static_cast<float>(view.height) - 14;
  float x = 12;
  auto swatch = [&](Color color, const std::string& label) {
    list->rects.push_back({{x, legend_y - 5, 14, 10}, color, WithAlpha(kAxisColor, 150)});
    list->texts.push_back({x + 18, legend_y, label, kTextColor});
    x += 30 + 7.2f * static_cast<float>(label.size());
  };
  swatch(kComputeColor, "compute / kernel");
  swatch(kMergedColor, "merged bin");
  swatch(kCollectiveColor, "collective / NCCL");
  swatch(kSendColor, "send");
  swatch(kRecvColor, "recv");
  swatch(kGpuCopyColor, "GPU copy");
  list->lines.push_back({{x, legend_y}, {x + 16, legend_y}, MareyLineCharts::kFlopsColor, 1.5f});
  list->texts.push_back({x + 20, legend_y, "FLOPs", kTextColor});
  x += 76;
  list->lines.push_back(
      {{x, legend_y}, {x + 16, legend_y}, MareyLineCharts::kMemoryColor, 1.5f, true});
  list->texts.push_back({x + 20, legend_y, "peak memory", kTextColor});
  x += 124;
  list->crosses.push_back({{x + 5, legend_y}, 4, kAlertColor, 2});
  list->texts.push_back({x + 14, legend_y, "alert", kTextColor});
}

}  // namespace trainscope::viewer
