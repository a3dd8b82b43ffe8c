#include "trainscope/viewer/loss_monitoring_layout.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "trainscope/viewer/loss_drawing.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

using loss_drawing::ContributionColor;
using loss_drawing::kBorderColor;
using loss_drawing::kCandidateColor;
using loss_drawing::kLine;
using loss_drawing::kMissingFill;
using loss_drawing::kMutedText;
using loss_drawing::ReductionColor;

constexpr float kMargin = 10;
constexpr float kTop = 50;  // below the two title lines
constexpr float kColorbarWidth = 172;
constexpr float kRowLabelWidth = 34;  // vertical "C_h" / "R_h" labels
constexpr float kHeader = 20;         // the layer name above each column
constexpr float kMapLabel = 18;       // "C_h  max ..." above each map

// A vertical strip, 1 x 256 pixels, the top at the scale's maximum.
PixelImage Strip(Color (*ramp)(float), RectF dest) {
  PixelImage image;
  image.dest = dest;
  image.width = 1;
  image.height = 256;
  for (int y = 0; y < 256; ++y) image.pixels.push_back(ramp(1.0f - static_cast<float>(y) / 255));
  return image;
}

std::string Title(const LossFrame& frame, const LossStateRecord* state) {
  std::string title = "Monitoring view \xE2\x80\x94 item " + std::to_string(frame.item);
  const size_t listed = state != nullptr ? state->items.size() : 0;
  if (frame.place.has_value()) {
    title += " (#" + std::to_string(*frame.place) + " of the top " + std::to_string(listed) + ")";
  } else {
    title += " (not in the current top " + std::to_string(listed) + ")";
  }
  return title;
}

}  // namespace

void LossMonitoringLayout::Lay(const Input& input) {
  DrawList& list = list_;
  list.Clear();
  geometry_ = {};
  const float width = static_cast<float>(input.width);
  const float height = static_cast<float>(input.height);
  list.backgrounds.push_back({{0, 0, width, height}, kBackgroundColor});
  if (!input.frame.has_value()) {
    loss_drawing::AddPlaceholder(&list, width, height, "Monitoring view",
                                 loss_drawing::kNoDataText);
    return;
  }
  const LossFrame& frame = *input.frame;
  list.texts.push_back(
      {kMargin, 14, Title(frame, input.state), kTextColor, Text::Align::kLeft, true, 10});
  std::string subtitle;
  if (frame.count > 0) {
    subtitle = "iteration " + std::to_string(frame.iteration) + " \xC2\xB7 epoch " +
               std::to_string(frame.epoch) + " \xC2\xB7 measured on rank " +
               std::to_string(frame.rank) + " \xC2\xB7 snapshot " +
               std::to_string(frame.index + 1) + " of " + std::to_string(frame.count) +
               " (the slider below picks the iteration)";
  } else if (input.fetching) {
    subtitle = "fetching item " + std::to_string(frame.item) + "'s map snapshots\xE2\x80\xA6";
  } else {
    subtitle = "no map snapshots kept for item " + std::to_string(frame.item) +
               " (maps are taken when a selected item is in a batch)";
  }
  list.texts.push_back({kMargin, 33, subtitle, kMutedText});
  if (width >= 1100) {
    // What the two rows mean, for a first-time reader.
    list.texts.push_back({width - kMargin, 14,
                          "C_h = \xCE\xA3_c max(f\xC2\xB7"
                          "b, 0): where the layer raises the loss",
                          Rgba(165, 15, 21), Text::Align::kRight});
    list.texts.push_back({width - kMargin, 33,
                          "R_h = \xE2\x88\x92\xCE\xA3_c min(f\xC2\xB7"
                          "b, 0): where it lowers the loss",
                          Rgba(8, 69, 148), Text::Align::kRight});
  }

  // Left: the input, its label and the network's output.
  const float left_w = std::clamp(width * 0.15f, 140.0f, 220.0f);
  list.texts.push_back({kMargin, kTop + 8, "Input", kTextColor, Text::Align::kLeft, true});
  const float input_side = std::max(0.0f, std::min(left_w - 10, (height - kTop) * 0.45f));
  const float input_top = kTop + 20;
  if (frame.input.valid()) {
    geometry_.input_rect = loss_drawing::FitImage(frame.input.width, frame.input.height, input_side,
                                                  kMargin + input_side / 2, input_top);
    list.images.push_back(loss_drawing::ThumbnailImage(frame.input, geometry_.input_rect));
  } else {
    geometry_.input_rect = {kMargin, input_top, input_side, input_side};
    list.rects.push_back({geometry_.input_rect, kMissingFill});
    list.texts.push_back({kMargin + input_side / 2, input_top + input_side / 2, "no image",
                          kMutedText, Text::Align::kCenter});
  }
  list.rects.push_back({geometry_.input_rect, 0, kBorderColor});
  const bool wrong = frame.label >= 0 && frame.prediction >= 0 && frame.label != frame.prediction;
  float ty = geometry_.input_rect.y + geometry_.input_rect.h + 6 + kLine / 2;
  list.texts.push_back({kMargin, ty, "label " + loss_drawing::ClassText(frame.label)});
  ty += kLine;
  list.texts.push_back({kMargin, ty,
                        "output (prediction) " + loss_drawing::ClassText(frame.prediction) +
                            (wrong ? "  \xE2\x89\xA0 label" : ""),
                        wrong ? kCandidateColor : kTextColor, Text::Align::kLeft, wrong});
  ty += kLine;
  list.texts.push_back(
      {kMargin, ty, "contribution " + loss_drawing::FormatValue(frame.contribution)});
  if (input.state != nullptr && !input.state->selection_layer.empty()) {
    ty += kLine;
    list.texts.push_back({kMargin, ty,
                          "(\xCE\xA3 f\xC2\xB7"
                          "b at layer " +
                              input.state->selection_layer + ")",
                          kMutedText});
  }

  // Middle: one column per monitored layer.
  const float maps_x0 = kMargin + left_w + 14 + kRowLabelWidth;
  const float maps_x1 = width - kColorbarWidth - kMargin;
  const size_t columns = frame.columns.size();
  if (columns == 0) {
    list.texts.push_back({(maps_x0 + maps_x1) / 2, (kTop + height) / 2,
                          "no monitored layers reported", kMutedText, Text::Align::kCenter});
    return;
  }
  const float column_w = (maps_x1 - maps_x0) / static_cast<float>(columns);
  const float map_side = std::max(
      0.0f, std::min(column_w - 16, (height - kTop - kHeader - 2 * kMapLabel - kMargin - 8) / 2));
  const float c_top = kTop + kHeader + kMapLabel;
  const float r_top = c_top + map_side + 8 + kMapLabel;
  const float scale = frame.scale_max;
  for (size_t i = 0; i < columns; ++i) {
    LossColumn column = frame.columns[i];
    const float x0 = maps_x0 + static_cast<float>(i) * column_w;
    const float cx = x0 + column_w / 2;
    std::string header = "layer " + column.layer;
    if (column.present) {
      header +=
          " \xC2\xB7 " + std::to_string(column.height) + "\xC3\x97" + std::to_string(column.width);
    }
    list.texts.push_back({cx, kTop + 8, header, kTextColor, Text::Align::kCenter, true});
    if (column.present) {
      column.contribution_rect =
          loss_drawing::FitImage(column.width, column.height, map_side, cx, c_top);
      column.reduction_rect =
          loss_drawing::FitImage(column.width, column.height, map_side, cx, r_top);
      list.images.push_back(loss_drawing::MapImage(column.contribution, column.width, column.height,
                                                   scale, &ContributionColor,
                                                   column.contribution_rect, frame.scaling));
      list.images.push_back(loss_drawing::MapImage(column.reduction, column.width, column.height,
                                                   scale, &ReductionColor, column.reduction_rect,
                                                   frame.scaling));
    } else {
      column.contribution_rect = {std::round(cx - map_side / 2), c_top, map_side, map_side};
      column.reduction_rect = {std::round(cx - map_side / 2), r_top, map_side, map_side};
      for (const RectF& r : {column.contribution_rect, column.reduction_rect}) {
        list.rects.push_back({r, kMissingFill});
        list.texts.push_back({cx, r.y + r.h / 2, frame.count > 0 ? "no map" : "no snapshot",
                              kMutedText, Text::Align::kCenter});
      }
    }
    list.rects.push_back({column.contribution_rect, 0, kBorderColor});
    list.rects.push_back({column.reduction_rect, 0, kBorderColor});
    if (column.present) {
      list.texts.push_back({cx, c_top - kMapLabel / 2,
                            "C_h  max " + loss_drawing::FormatValue(column.contribution_max),
                            kMutedText, Text::Align::kCenter});
      list.texts.push_back({cx, r_top - kMapLabel / 2,
                            "R_h  max " + loss_drawing::FormatValue(column.reduction_max),
                            kMutedText, Text::Align::kCenter});
    }
    geometry_.columns.push_back(std::move(column));
  }
  // Row titles, vertical, just left of the first column's maps.
  const float row_x = geometry_.columns.front().contribution_rect.x - 14;
  list.texts.push_back({row_x, c_top + map_side / 2, "C_h: contribution \xE2\x89\xA5 0",
                        Rgba(165, 15, 21), Text::Align::kCenter, true, 0, true});
  list.texts.push_back({row_x, r_top + map_side / 2, "R_h: reduction \xE2\x89\xA5 0",
                        Rgba(8, 69, 148), Text::Align::kCenter, true, 0, true});

  // Right: the shared colour bar, C and R side by side on one axis.
  const float bar_x = width - kColorbarWidth;
  const float bar_top = c_top;
  // Three lines of notes fit below the bar.
  const float bar_bottom =
      std::max(bar_top + 40, std::min(r_top + map_side, height - 3 * kLine - kMargin - 6));
  geometry_.colorbar_contribution = {bar_x, bar_top, 16, bar_bottom - bar_top};
  geometry_.colorbar_reduction = {bar_x + 20, bar_top, 16, bar_bottom - bar_top};
  list.images.push_back(Strip(&ContributionColor, geometry_.colorbar_contribution));
  list.images.push_back(Strip(&ReductionColor, geometry_.colorbar_reduction));
  list.rects.push_back({geometry_.colorbar_contribution, 0, kBorderColor});
  list.rects.push_back({geometry_.colorbar_reduction, 0, kBorderColor});
  list.texts.push_back({bar_x + 8, bar_top - 9, "C", kTextColor, Text::Align::kCenter, true});
  list.texts.push_back({bar_x + 28, bar_top - 9, "R", kTextColor, Text::Align::kCenter, true});
  const float tick_x = bar_x + 38;
  // Ticks where their values fall on the maps' ramp: linear, or one per
  // decade below the top on the log scale.
  std::vector<double> ticks;
  if (frame.scaling == MapScaling::kLog && scale > 0) {
    for (int d = 0; d <= static_cast<int>(kLogDecades); ++d)
      ticks.push_back(scale / std::pow(10.0, d));
  } else {
    ticks = NiceTicks(0, scale, 6);
  }
  if (ticks.empty()) ticks.push_back(0);
  for (double t : ticks) {
    const float y =
        bar_bottom - loss_drawing::RampPosition(static_cast<float>(t), scale, frame.scaling) *
                         (bar_bottom - bar_top);
    list.lines.push_back({{tick_x, y}, {tick_x + 4, y}, kAxisColor});
    list.texts.push_back({tick_x + 7, y, loss_drawing::FormatValue(t), kTextColor});
  }
  list.texts.push_back({width - 14, (bar_top + bar_bottom) / 2,
                        "loss contribution, f\xC2\xB7"
                        "b",
                        kTextColor, Text::Align::kCenter, true, 0, true});
  const bool per_iteration = frame.scaling == MapScaling::kPerIteration;
  list.texts.push_back({bar_x, bar_bottom + 12,
                        std::string(frame.scaling == MapScaling::kLog ? "log scale: every map"
                                                                      : "one scale: every map"),
                        kMutedText});
  list.texts.push_back({bar_x, bar_bottom + 12 + kLine,
                        per_iteration ? std::string("of this iteration")
                                      : "of all " + std::to_string(frame.count) + " snapshots",
                        kMutedText});
  list.texts.push_back({bar_x, bar_bottom + 12 + 2 * kLine,
                        "this iteration: max " + loss_drawing::FormatValue(frame.frame_max),
                        kMutedText});
}

}  // namespace trainscope::viewer
