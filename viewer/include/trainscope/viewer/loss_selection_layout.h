// Lays out the Selection View of the loss-contribution views: a title and
// legend, then a grid of cells, highest contribution first, each with the
// item's input thumbnail (nearest neighbour, whole multiples), its place and
// index, label and prediction, contribution, rank and epochs in the top. A
// candidate mislabeled item gets a thick red frame; the monitored item a
// blue fill. The grid picks the column count that gives the largest
// thumbnails; when even the smallest readable one does not fit, the grid
// runs past the bottom (content_height) and the view scrolls. It answers
// clicks and tooltips from the cells it placed.
//
// Usage:
//   LossSelectionLayout layout;
//   layout.Lay({.width = 1200, .height = 500, .state = &state, .cells = model.Cells()});
//   const DrawList& grid = layout.list();
//   std::optional<uint64_t> item = layout.ItemAt(x, y);
//
// Threading: not thread-safe; a plain value owned by one thread.
#ifndef TRAINSCOPE_VIEWER_LOSS_SELECTION_LAYOUT_H_
#define TRAINSCOPE_VIEWER_LOSS_SELECTION_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/loss_view_records.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class LossSelectionLayout {
 public:
  struct Input {
    int width = 800;
    int height = 500;
    const LossStateRecord* state = nullptr;  // null or without items: the placeholder
    std::vector<LossCell> cells;             // in place order
    uint32_t candidate_epochs = 3;           // the legend's and the streak's threshold
  };

  void Lay(Input input);

  const DrawList& list() const { return list_; }
  // The cells with their rects (empty without data).
  const std::vector<LossCell>& cells() const { return cells_; }
  // The grid's height: more than the viewport when the cells do not fit at
  // a readable size.
  float content_height() const { return content_height_; }
  std::optional<uint64_t> ItemAt(float x, float y) const;
  std::string TooltipAt(float x, float y) const;

 private:
  DrawList list_;
  std::vector<LossCell> cells_;
  float content_height_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LOSS_SELECTION_LAYOUT_H_
