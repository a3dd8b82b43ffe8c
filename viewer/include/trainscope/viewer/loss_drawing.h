// What the two loss-contribution views draw alike (LossSelectionLayout and
// LossMonitoringLayout): their colours and colour ramps, thumbnails and
// maps as pixel images scaled by whole multiples, number and class texts,
// and the placeholder shown when there is no data.
//
// Usage:
//   RectF dest = loss_drawing::FitImage(28, 28, /*side=*/120, cx, top);
//   list.images.push_back(loss_drawing::ThumbnailImage(thumbnail, dest));
//   list.images.push_back(loss_drawing::MapImage(values, w, h, scale,
//                                                &loss_drawing::ContributionColor, dest));
//
// Threading: pure functions and constants.
#ifndef TRAINSCOPE_VIEWER_LOSS_DRAWING_H_
#define TRAINSCOPE_VIEWER_LOSS_DRAWING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/loss_view_records.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer::loss_drawing {

inline constexpr Color kCandidateColor = Rgba(215, 25, 28);
inline constexpr Color kChosenColor = Rgba(33, 102, 172);
inline constexpr Color kChosenFill = Rgba(222, 235, 247);
inline constexpr Color kBorderColor = Rgba(150, 150, 150);
inline constexpr Color kMutedText = Rgba(110, 110, 110);
inline constexpr Color kMissingFill = Rgba(236, 236, 236);
inline constexpr float kLine = 15;  // text line height, px
inline constexpr const char* kNoDataText =
    "no loss-contribution data: start trainscope.LossContribution in the training script";

// Sequential ramps, t in [0, 1]: white to dark red for C, white to dark
// blue for R (ColorBrewer Reds and Blues, perceptually ordered).
Color ContributionColor(float t);
Color ReductionColor(float t);

// "0.0123", "1.25e+03": three significant digits whatever the magnitude.
std::string FormatValue(double value);

// A class index, "?" when unknown.
std::string ClassText(int32_t c);

// The largest side <= `available` that is a whole multiple of `pixels`, so
// nearest-neighbour scaling gives every source pixel the same size; below
// one pixel per pixel, `available` itself.
float FitSide(float available, uint32_t pixels);

// The rect for an image of `width` x `height` pixels, as large as fits in a
// `side` square (whole multiples), centred horizontally on `cx`, top at `top`.
RectF FitImage(uint32_t width, uint32_t height, float side, float cx, float top);

PixelImage ThumbnailImage(const ThumbnailRecord& input, RectF dest);

// A map through a ramp on [0, scale]; NaN (a broken half) shows grey.
// kLog: on [scale / 10^kLogDecades, scale], logarithmic (below: 0).
PixelImage MapImage(const std::vector<float>& values, uint32_t width, uint32_t height, float scale,
                    Color (*ramp)(float), RectF dest,
                    MapScaling scaling = MapScaling::kPerIteration);
// Where `value` falls on the ramp, 0 to 1, for `scaling` with top `scale`.
float RampPosition(float value, float scale, MapScaling scaling);

// The whole view says there is nothing to show, and how to get something.
void AddPlaceholder(DrawList* list, float width, float height, const std::string& title,
                    const std::string& text);

}  // namespace trainscope::viewer::loss_drawing

#endif  // TRAINSCOPE_VIEWER_LOSS_DRAWING_H_
