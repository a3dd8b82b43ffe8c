#include "trainscope/viewer/overview_palette.h"

#include <iterator>

namespace trainscope::viewer {
namespace {

constexpr Color kPalette[] = {
    Rgba(31, 119, 180),  Rgba(255, 127, 14), Rgba(44, 160, 44),   Rgba(214, 39, 40),
    Rgba(148, 103, 189), Rgba(140, 86, 75),  Rgba(227, 119, 194), Rgba(127, 127, 127),
    Rgba(188, 189, 34),  Rgba(23, 190, 207), Rgba(57, 59, 121),   Rgba(99, 121, 57),
    Rgba(140, 109, 49),  Rgba(132, 60, 57),  Rgba(123, 65, 115),  Rgba(82, 84, 163)};

}  // namespace

Color OverviewPalette::Rank(uint32_t rank) { return kPalette[rank % std::size(kPalette)]; }

float OverviewPalette::AddSwatch(DrawList* list, float x, float y, Color color,
                                 const std::string& label, bool line) {
  if (line) {
    list->lines.push_back({{x, y}, {x + 16, y}, color, 2.5f});
  } else {
    list->rects.push_back({{x, y - 5, 12, 10}, color, WithAlpha(kAxisColor, 160)});
  }
  list->texts.push_back({x + 20, y, label, kTextColor, Text::Align::kLeft});
  return 34 + 7.2f * static_cast<float>(label.size());
}

}  // namespace trainscope::viewer
