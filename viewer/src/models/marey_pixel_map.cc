#include "trainscope/viewer/marey_pixel_map.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "trainscope/viewer/marey_palette.h"

namespace trainscope::viewer {

void MareyPixelMap::Add(const MareyView& view, const std::vector<MareyRow>& rows,
                        const std::vector<std::vector<const DeviceStepRecord*>>& step_values,
                        DrawList* list) {
  const size_t n = std::min(rows.size(), step_values.size());
  std::vector<std::array<double, 3>> values(n, {-1, -1, -1});
  std::array<double, 3> top = {0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    const auto& devices = step_values[i];
    if (devices.empty()) continue;
    for (int c = 0; c < 3; ++c) {
      std::vector<double> v;
      for (const DeviceStepRecord* d : devices) {
        v.push_back(c == 0   ? static_cast<double>(d->flops)
                    : c == 1 ? d->flops_per_second
                             : static_cast<double>(d->peak_memory_bytes));
      }
      double x = 0;
      switch (rows[i].kind) {
        case MareyRowKind::kGroupMin:
          x = *std::min_element(v.begin(), v.end());
          break;
        case MareyRowKind::kGroupMax:
          x = *std::max_element(v.begin(), v.end());
          break;
        default:
          x = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      }
      values[i][c] = x;
      top[c] = std::max(top[c], x);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const float y = rows[i].top;
    const float h = rows[i].height >= 4 ? rows[i].height - 1 : rows[i].height;
    for (int c = 0; c < 3; ++c) {
      const float x = view.PixelMapX(c);
      const Color color = values[i][c] < 0 ? kNoValueColor
                          : top[c] <= 0
                              ? Rgba(245, 247, 252)
                              : MareyPalette::Lerp(kLowColor, kHighColor, values[i][c] / top[c]);
      list->rects.push_back({{x, y, MareyView::kPixelMapColumn - 2, h}, color});
    }
  }
}

}  // namespace trainscope::viewer
