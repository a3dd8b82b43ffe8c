#include "trainscope/viewer/loss_drawing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainscope::viewer {

const char* MapScalingName(MapScaling scaling) {
  switch (scaling) {
    case MapScaling::kPerIteration:
      return "per-iteration";
    case MapScaling::kShared:
      return "shared";
    case MapScaling::kLog:
      return "log";
  }
  return "?";
}

}  // namespace trainscope::viewer

namespace trainscope::viewer::loss_drawing {
namespace {

Color Ramp(const Color* stops, int count, float t) {
  t = std::clamp(std::isnan(t) ? 0.0f : t, 0.0f, 1.0f) * static_cast<float>(count - 1);
  const int i = std::min(count - 2, static_cast<int>(t));
  const float f = t - static_cast<float>(i);
  auto mix = [&](int shift) {
    const float a = static_cast<float>((stops[i] >> shift) & 0xFF);
    const float b = static_cast<float>((stops[i + 1] >> shift) & 0xFF);
    return static_cast<uint32_t>(std::lround(a + (b - a) * f));
  };
  return Rgba(mix(16), mix(8), mix(0));
}

}  // namespace

Color ContributionColor(float t) {
  static constexpr Color kReds[] = {Rgba(255, 255, 255), Rgba(254, 224, 210), Rgba(252, 146, 114),
                                    Rgba(222, 45, 38), Rgba(103, 0, 13)};
  return Ramp(kReds, 5, t);
}

Color ReductionColor(float t) {
  static constexpr Color kBlues[] = {Rgba(255, 255, 255), Rgba(198, 219, 239), Rgba(107, 174, 214),
                                     Rgba(33, 113, 181), Rgba(8, 48, 107)};
  return Ramp(kBlues, 5, t);
}

std::string FormatValue(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  return buffer;
}

std::string ClassText(int32_t c) { return c < 0 ? "?" : std::to_string(c); }

float FitSide(float available, uint32_t pixels) {
  if (pixels == 0 || available <= 0) return std::max(0.0f, available);
  const float whole = std::floor(available / static_cast<float>(pixels));
  return whole >= 1 ? whole * static_cast<float>(pixels) : available;
}

RectF FitImage(uint32_t width, uint32_t height, float side, float cx, float top) {
  const uint32_t longest = std::max(width, height);
  if (longest == 0) return {cx - side / 2, top, side, side};
  const float scale = FitSide(side, longest) / static_cast<float>(longest);
  const float w = scale * static_cast<float>(width);
  const float h = scale * static_cast<float>(height);
  return {std::round(cx - w / 2), top, w, h};
}

PixelImage ThumbnailImage(const ThumbnailRecord& input, RectF dest) {
  PixelImage image;
  image.dest = dest;
  if (!input.valid()) return image;
  image.width = static_cast<int>(input.width);
  image.height = static_cast<int>(input.height);
  const size_t n = size_t{input.width} * input.height;
  image.pixels.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &input.pixels[i * input.channels];
    image.pixels.push_back(input.channels == 1 ? Rgba(p[0], p[0], p[0]) : Rgba(p[0], p[1], p[2]));
  }
  return image;
}

float RampPosition(float value, float scale, MapScaling scaling) {
  if (!(scale > 0)) return 0.0f;
  if (scaling != MapScaling::kLog) return std::clamp(value / scale, 0.0f, 1.0f);
  if (!(value > 0)) return 0.0f;
  const float decades = std::log10(value / scale);  // <= 0 at or below the top
  return std::clamp(1.0f + decades / kLogDecades, 0.0f, 1.0f);
}

PixelImage MapImage(const std::vector<float>& values, uint32_t width, uint32_t height, float scale,
                    Color (*ramp)(float), RectF dest, MapScaling scaling) {
  PixelImage image;
  image.dest = dest;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.pixels.reserve(values.size());
  for (float v : values) {
    if (std::isnan(v)) {
      image.pixels.push_back(Rgba(160, 160, 160));
      continue;
    }
    image.pixels.push_back(ramp(RampPosition(v, scale, scaling)));
  }
  return image;
}

void AddPlaceholder(DrawList* list, float width, float height, const std::string& title,
                    const std::string& text) {
  list->texts.push_back({width / 2, height / 2 - 14, title, kMutedText, Text::Align::kCenter,
                         /*bold=*/true, /*point_size=*/11});
  list->texts.push_back({width / 2, height / 2 + 10, text, kMutedText, Text::Align::kCenter,
                         /*bold=*/false, /*point_size=*/10});
}

}  // namespace trainscope::viewer::loss_drawing
