#include "trainscope/viewer/loss_selection_layout.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainscope/viewer/loss_drawing.h"

namespace trainscope::viewer {
namespace {

using loss_drawing::kBorderColor;
using loss_drawing::kCandidateColor;
using loss_drawing::kChosenColor;
using loss_drawing::kChosenFill;
using loss_drawing::kLine;

constexpr float kMargin = 10;
constexpr float kTextBlock = 4 * kLine + 6;  // four lines under the thumbnail
constexpr float kMinCellWidth = 132;         // fits "rank 2 · 3 ep. in top"
constexpr float kCandidateFrame = 3;
constexpr float kMinThumb = 32;   // below this a digit is unreadable: scroll instead
constexpr float kMaxThumb = 192;  // a few items in a large view stay thumbnails

}  // namespace

void LossSelectionLayout::Lay(Input input) {
  DrawList& list = list_;
  list.Clear();
  cells_.clear();
  content_height_ = static_cast<float>(input.height);
  const float width = static_cast<float>(input.width);
  const float height = static_cast<float>(input.height);
  list.backgrounds.push_back({{0, 0, width, height}, kBackgroundColor});
  if (input.state == nullptr || input.state->items.empty()) {
    loss_drawing::AddPlaceholder(&list, width, height, "Selection view", loss_drawing::kNoDataText);
    return;
  }
  cells_ = std::move(input.cells);
  const LossStateRecord& state = *input.state;
  const uint32_t top_n = std::max<uint32_t>(state.top_n, static_cast<uint32_t>(cells_.size()));
  std::string title = "Selection view \xE2\x80\x94 the top " + std::to_string(top_n) +
                      " training items of epoch " + std::to_string(state.epoch) +
                      " by loss contribution";
  if (!state.selection_layer.empty()) title += " at layer " + state.selection_layer;
  title += " (iteration " + std::to_string(state.iteration) + ")";
  list.texts.push_back({kMargin, 14, title, kTextColor, Text::Align::kLeft, true, 10});

  // Legend: one line when wide enough, else two.
  const std::string candidate_text =
      "red: candidate mislabeled item (label \xE2\x89\xA0 prediction, or in the top for "
      "\xE2\x89\xA5 " +
      std::to_string(input.candidate_epochs) + " epochs in a row)";
  const std::string chosen_text = "blue: shown in the Monitoring view (click a cell to choose)";
  const bool one_line = width >= 1150;
  const float legend_y = 34;
  const float chosen_x = one_line ? std::round(width * 0.56f) : kMargin;
  const float chosen_y = one_line ? legend_y : legend_y + 18;
  list.backgrounds.push_back({{kMargin, legend_y - 6, 12, 12}, kCandidateColor});
  list.texts.push_back({kMargin + 18, legend_y, candidate_text});
  list.backgrounds.push_back({{chosen_x, chosen_y - 6, 12, 12}, kChosenColor});
  list.backgrounds.push_back({{chosen_x + 2, chosen_y - 4, 8, 8}, kChosenFill});
  list.texts.push_back({chosen_x + 18, chosen_y, chosen_text});

  // The column count that gives the largest thumbnails with every cell in
  // view, cells no narrower than their text. When even kMinThumb does not
  // fit, the most columns and kMinThumb: the grid runs past the bottom and
  // the widget scrolls (selection_content_height).
  const RectF area{kMargin, chosen_y + 14, width - 2 * kMargin, height - chosen_y - 14 - kMargin};
  const size_t n = cells_.size();
  const size_t max_columns =
      std::clamp<size_t>(static_cast<size_t>(area.w / kMinCellWidth), 1, std::max<size_t>(1, n));
  size_t best_columns = max_columns;
  float best_thumb = -1e9f;
  for (size_t columns = 1; columns <= max_columns; ++columns) {
    const float cell_w = area.w / static_cast<float>(columns);
    const size_t rows = (n + columns - 1) / columns;
    const float cell_h = area.h / static_cast<float>(rows);
    const float thumb = std::min({cell_w - 16, cell_h - kTextBlock - 16, kMaxThumb});
    if (thumb > best_thumb + 0.5f) {
      best_thumb = thumb;
      best_columns = columns;
    }
  }
  if (best_thumb < kMinThumb) best_columns = max_columns;
  const float cell_w = std::floor(area.w / static_cast<float>(best_columns));
  const float thumb = std::max(best_thumb, std::min(kMinThumb, cell_w - 16));
  const float cell_h = thumb + kTextBlock + 16;
  const size_t rows = (n + best_columns - 1) / best_columns;
  content_height_ = area.y + static_cast<float>(rows) * cell_h + kMargin;

  for (size_t i = 0; i < n; ++i) {
    LossCell& cell = cells_[i];
    const float x = area.x + static_cast<float>(i % best_columns) * cell_w;
    const float y = area.y + static_cast<float>(i / best_columns) * cell_h;
    cell.rect = {x + 3, y + 3, cell_w - 6, cell_h - 6};
    // Frames as rects with the next one inset over them: red (candidate),
    // then blue (monitored), then the fill.
    RectF inner = cell.rect;
    auto frame = [&](Color color, float width) {
      list.backgrounds.push_back({inner, color});
      inner = {inner.x + width, inner.y + width, inner.w - 2 * width, inner.h - 2 * width};
    };
    if (cell.candidate) frame(kCandidateColor, kCandidateFrame);
    if (cell.chosen) frame(kChosenColor, 2);
    if (!cell.candidate && !cell.chosen) frame(kBorderColor, 1);
    list.backgrounds.push_back({inner, cell.chosen ? kChosenFill : Rgba(250, 250, 250)});
    const float cx = cell.rect.x + cell.rect.w / 2;
    const float thumb_top = cell.rect.y + 7;
    if (cell.input.valid()) {
      cell.thumb_rect =
          loss_drawing::FitImage(cell.input.width, cell.input.height, thumb, cx, thumb_top);
      list.images.push_back(loss_drawing::ThumbnailImage(cell.input, cell.thumb_rect));
    } else {
      cell.thumb_rect = {std::round(cx - thumb / 2), thumb_top, thumb, thumb};
      list.rects.push_back({cell.thumb_rect, loss_drawing::kMissingFill});
      list.texts.push_back(
          {cx, thumb_top + thumb / 2, "no image", loss_drawing::kMutedText, Text::Align::kCenter});
    }
    list.rects.push_back({cell.thumb_rect, 0, kBorderColor});

    float ty = thumb_top + thumb + 4 + kLine / 2;
    list.texts.push_back(
        {cx, ty, "#" + std::to_string(cell.place) + " \xC2\xB7 item " + std::to_string(cell.item),
         kTextColor, Text::Align::kCenter, true});
    ty += kLine;
    list.texts.push_back({cx, ty,
                          "label " + loss_drawing::ClassText(cell.label) + " \xC2\xB7 pred " +
                              loss_drawing::ClassText(cell.prediction),
                          cell.misclassified ? kCandidateColor : kTextColor, Text::Align::kCenter,
                          cell.misclassified});
    ty += kLine;
    list.texts.push_back({cx, ty, "contrib " + loss_drawing::FormatValue(cell.contribution),
                          kTextColor, Text::Align::kCenter});
    ty += kLine;
    const bool long_streak = cell.epochs_in_top >= input.candidate_epochs;
    list.texts.push_back({cx, ty,
                          "rank " + std::to_string(cell.rank) + " \xC2\xB7 " +
                              std::to_string(cell.epochs_in_top) + " ep. in top",
                          long_streak ? kCandidateColor : loss_drawing::kMutedText,
                          Text::Align::kCenter, long_streak});
  }
}

std::optional<uint64_t> LossSelectionLayout::ItemAt(float x, float y) const {
  for (const LossCell& cell : cells_) {
    if (cell.rect.Contains(x, y)) return cell.item;
  }
  return std::nullopt;
}

std::string LossSelectionLayout::TooltipAt(float x, float y) const {
  for (const LossCell& cell : cells_) {
    if (!cell.rect.Contains(x, y)) continue;
    std::string text = "item " + std::to_string(cell.item) + " (#" + std::to_string(cell.place) +
                       "): loss contribution " + loss_drawing::FormatValue(cell.contribution);
    text += "\nlabel " + loss_drawing::ClassText(cell.label) + ", prediction " +
            loss_drawing::ClassText(cell.prediction) + ", measured on rank " +
            std::to_string(cell.rank);
    text += "\nin the top for " + std::to_string(cell.epochs_in_top) +
            " completed epochs in a row; " + std::to_string(cell.snapshots) + " map snapshots kept";
    if (!cell.history.empty()) {
      text += "\nplace per epoch:";
      for (const EpochScoreRecord& e : cell.history) {
        text += " " + std::to_string(e.epoch) + ":" +
                (e.position == 0 ? std::string("-") : "#" + std::to_string(e.position));
      }
    }
    if (cell.candidate) text += "\ncandidate mislabeled or ambiguous item";
    return text + "\nclick to show it in the Monitoring view";
  }
  return "";
}

}  // namespace trainscope::viewer
