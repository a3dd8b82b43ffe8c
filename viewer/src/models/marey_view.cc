#include "trainscope/viewer/marey_view.h"

#include <algorithm>

namespace trainscope::viewer {

void MareyView::Resize(int new_width, int new_height) {
  width = std::max(new_width, 320);
  height = std::max(new_height, 200);
  plot = {kLeftMargin, kTopMargin, static_cast<float>(width) - kLeftMargin - kRightMargin,
          static_cast<float>(height) - kTopMargin - kBottomMargin};
}

float MareyView::TimeToX(int64_t t) const {
  const double span = static_cast<double>(end - start);
  return plot.x + static_cast<float>((static_cast<double>(t - start) / span) * plot.w);
}

int64_t MareyView::XToTime(float x) const {
  const double span = static_cast<double>(end - start);
  return start + static_cast<int64_t>((x - plot.x) / std::max(1.0f, plot.w) * span);
}

}  // namespace trainscope::viewer
