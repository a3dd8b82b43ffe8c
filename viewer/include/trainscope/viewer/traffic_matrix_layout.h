// What the NodeTrix-style traffic matrix draws (issue 24.2): one cell per
// ordered device pair (row sends, column receives), devices grouped by host
// with a line between hosts, the cell's colour the pair's transfer time over
// the selected steps on a white -> dark red scale (so the link that costs
// the most time, e.g. a slow one, is the darkest cell and is outlined), per
// row bars of bytes sent and transfer time, and box plots of the bandwidth
// step by step of the links with the most transfer time. Cells are one
// nearest-neighbour pixel image, so 1,024 devices cost one image.
//
// Usage:
//   TrafficMatrixLayout matrix(&state.traffic);
//   matrix.SetViewport(1200, 800);
//   const DrawList& list = matrix.Draw();          // recomputed only when stale
//   std::string text = matrix.TooltipAt(x, y);     // names the pair and its figures
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_TRAFFIC_MATRIX_LAYOUT_H_
#define TRAINSCOPE_VIEWER_TRAFFIC_MATRIX_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/traffic_model.h"

namespace trainscope::viewer {

class TrafficMatrixLayout {
 public:
  static constexpr size_t kBoxPlots = 6;
  static constexpr Color kEmptyColor = Rgba(246, 246, 246);
  static constexpr Color kBytesBarColor = Rgba(120, 144, 156);
  static constexpr Color kTimeBarColor = Rgba(183, 28, 28);

  // A box plot of one link's bandwidth over the selected steps.
  struct LinkBox {
    size_t src = 0;  // matrix indices
    size_t dst = 0;
    TrafficModel::BoxStats box;
    RectF rect;  // its row
  };

  explicit TrafficMatrixLayout(TrafficModel* model);

  void SetViewport(int width, int height);
  // Linked selection: the matrix shows only these devices (a lasso in the
  // topology; empty: all of them) and outlines this link's cell in blue.
  void SetFocus(const std::set<uint32_t>& ranks);
  void SetSelectedLink(std::optional<std::pair<uint32_t, uint32_t>> link);
  const DrawList& Draw();
  // The matrix drawn: the model's, or its focused rows and columns.
  const TrafficModel::Matrix& shown();
  // The (row, column) under a point of the matrix, if any.
  std::optional<std::pair<size_t, size_t>> CellAt(float x, float y);
  RectF CellRect(size_t src, size_t dst);
  // Hover text: the pair, its hosts and locality, bytes, messages, time,
  // rate and its bandwidth spread; a row bar's totals; "" elsewhere.
  std::string TooltipAt(float x, float y);

  RectF matrix_rect() { return Draw(), matrix_; }
  RectF bars_rect() { return Draw(), bars_; }
  const std::vector<LinkBox>& boxes() { return Draw(), boxes_; }
  // White (0) to dark red (1).
  static Color HeatColor(double fraction);

 private:
  void Rebuild();
  std::string CellText(size_t src, size_t dst);

  TrafficModel* model_;
  std::set<uint32_t> focus_;
  std::optional<std::pair<uint32_t, uint32_t>> selected_link_;
  TrafficModel::Matrix focused_;
  int width_ = 800;
  int height_ = 600;
  uint64_t built_version_ = UINT64_MAX;
  bool dirty_ = true;
  DrawList list_;
  RectF matrix_;
  RectF bars_;
  float cell_ = 0;
  std::vector<LinkBox> boxes_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_TRAFFIC_MATRIX_LAYOUT_H_
