// The trend view (issue 24.3, after GiViP): small multiples, one row per
// unit of a level (device, host, rack) and one column per figure (step
// time, compute, waits, bytes and messages out and in), each a line over
// frames of N steps (UnitTrendModel), every column on one scale, its
// smallest to its largest value, so the unit that stands out is seen across
// rows. A frame slider picks the frame
// marked in every cell, with its value. More units than rows fit: the
// selected units and those farthest from the median unit in any column (the
// ones that stand out) are kept.
//
// Usage:
//   TrendLayout trend(&hierarchy, &trends, &selection);
//   trend.SetFrameSteps(5);
//   trend.SetFrame(trend.frame_count() - 1);
//   const DrawList& list = trend.Draw();
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_TREND_LAYOUT_H_
#define TRAINSCOPE_VIEWER_TREND_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/cluster_view.h"
#include "trainscope/viewer/selection_state.h"
#include "trainscope/viewer/unit_trend_model.h"

namespace trainscope::viewer {

class TrendLayout : public ClusterView {
 public:
  static constexpr float kMinRowHeight = 18;

  struct Row {
    size_t unit = 0;
    RectF rect;  // the whole row
    bool selected = false;
  };

  TrendLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends, SelectionState* selection);

  void SetViewport(int width, int height) override;
  void SetLevel(ClusterLevel level) override;
  ClusterLevel level() const override { return level_; }
  void SetFrameSteps(uint32_t steps);
  // The marked frame; clamped to the frames there are (default: the last).
  void SetFrame(std::optional<size_t> frame);

  const DrawList& Draw() override;
  std::string TooltipAt(float x, float y) override;
  bool ClickAt(float x, float y) override;

  size_t frame_count() { return Draw(), series_.frames.size(); }
  size_t frame() { return Draw(), frame_; }
  uint32_t frame_steps() const { return frame_steps_; }
  const UnitTrendModel::Series& series() { return Draw(), series_; }
  const std::vector<Row>& rows() { return Draw(), rows_; }
  // The cell of a row's metric (its plot area).
  RectF CellRect(size_t row, int metric);
  // Where a frame's value sits in a cell.
  PointF ValuePoint(size_t row, int metric, size_t frame);

 private:
  void Rebuild();

  ClusterHierarchy* hierarchy_;
  UnitTrendModel* trends_;
  SelectionState* selection_;
  ClusterLevel level_ = ClusterLevel::kHost;
  uint32_t frame_steps_ = 1;
  std::optional<size_t> wanted_frame_;
  int width_ = 800;
  int height_ = 600;
  uint64_t built_hierarchy_ = UINT64_MAX;
  uint64_t built_trends_ = UINT64_MAX;
  uint64_t built_selection_ = UINT64_MAX;
  DrawList list_;
  UnitTrendModel::Series series_;
  size_t frame_ = 0;
  std::vector<Row> rows_;
  std::vector<double> column_min_;
  std::vector<double> column_max_;
  float label_width_ = 0;
  float cell_width_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_TREND_LAYOUT_H_
