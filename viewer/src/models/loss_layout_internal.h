// Drawing helpers shared by the loss views' layouts (loss_selection_layout.cc,
// loss_monitoring_layout.cc): thumbnails and maps as pixel images, number
// formats, the no-data placeholder.
//
// Threading: pure functions.
#ifndef TRAINSCOPE_VIEWER_SRC_MODELS_LOSS_LAYOUT_INTERNAL_H_
#define TRAINSCOPE_VIEWER_SRC_MODELS_LOSS_LAYOUT_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer::loss_layout {

inline constexpr Color kBorderColor = Rgba(150, 150, 150);
inline constexpr Color kMutedText = Rgba(110, 110, 110);
inline constexpr Color kMissingFill = Rgba(236, 236, 236);
inline constexpr float kLine = 15;  // text line height, px

// "0.0123", "1.25e+03": three significant digits whatever the magnitude.
inline std::string FormatValue(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  return buffer;
}

// A class index, "?" when unknown.
inline std::string ClassText(int32_t c) { return c < 0 ? "?" : std::to_string(c); }

// The largest side <= `available` that is a whole multiple of `pixels`, so
// nearest-neighbour scaling gives every source pixel the same size; below
// one pixel per pixel, `available` itself.
inline float FitSide(float available, uint32_t pixels) {
  if (pixels == 0 || available <= 0) return std::max(0.0f, available);
  const float whole = std::floor(available / static_cast<float>(pixels));
  return whole >= 1 ? whole * static_cast<float>(pixels) : available;
}

// The rect for an image of `width` x `height` pixels, as large as fits in a
// `side` square (whole multiples), centred horizontally on `cx`, top at `top`.
inline RectF FitImage(uint32_t width, uint32_t height, float side, float cx, float top) {
  const uint32_t longest = std::max(width, height);
  if (longest == 0) return {cx - side / 2, top, side, side};
  const float scale = FitSide(side, longest) / static_cast<float>(longest);
  const float w = scale * static_cast<float>(width);
  const float h = scale * static_cast<float>(height);
  return {std::round(cx - w / 2), top, w, h};
}

inline PixelImage ThumbnailImage(const ThumbnailRecord& input, RectF dest) {
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

// A map through a ramp on [0, scale]; NaN (a broken half) shows grey.
inline PixelImage MapImage(const std::vector<float>& values, uint32_t width, uint32_t height,
                           float scale, Color (*ramp)(float), RectF dest) {
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
    const float t = scale > 0 ? std::clamp(v / scale, 0.0f, 1.0f) : 0.0f;
    image.pixels.push_back(ramp(t));
  }
  return image;
}

// The whole view says there is nothing to show, and how to get something.
inline void AddPlaceholder(DrawList* list, float width, float height, const std::string& title,
                           const std::string& text) {
  list->texts.push_back({width / 2, height / 2 - 14, title, kMutedText, Text::Align::kCenter,
                         /*bold=*/true, /*point_size=*/11});
  list->texts.push_back({width / 2, height / 2 + 10, text, kMutedText, Text::Align::kCenter,
                         /*bold=*/false, /*point_size=*/10});
}

}  // namespace trainscope::viewer::loss_layout

#endif  // TRAINSCOPE_VIEWER_SRC_MODELS_LOSS_LAYOUT_INTERNAL_H_
