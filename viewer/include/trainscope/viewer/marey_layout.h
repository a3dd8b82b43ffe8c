// Lays out one frame of the Marey graph (see MareyModel) as a DrawList: the
// time axis, each row's operators as bands or pixels (compute merged into
// density bins where it is denser than the row's mean or narrower than
// `min_band_px`; rows thinner than `dense_row_px` rasterised into one image
// on a few threads), the joins between adjacent rows, the FLOPs and memory
// line charts, the pixel map of the selected step and the legend. It holds
// no data: MareyModel hands it a Frame (the rows, their tracks, the steps,
// the view) and reads back what its hit tests need (the row pitch, which
// bins were merged).
//
// Usage:
//   MareyLayout layout({.bins = 100});
//   MareyLayout::View view;
//   view.Resize(1200, 700);
//   view.start = t0, view.end = t1;
//   MareyLayout::Frame frame{.view = view, .rows = &rows, .tracks = &tracks, ...};
//   layout.Lay(frame);  // fills layout.list(), sets each row's axis_y
//   bool merged = layout.merged(row, bin);
//
// Threading: not thread-safe. Lay() lays dense rows out on up to
// kMaxLayoutThreads short-lived threads (disjoint rows and pixel rows),
// joined before it returns.
#ifndef TRAINSCOPE_VIEWER_MAREY_LAYOUT_H_
#define TRAINSCOPE_VIEWER_MAREY_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/marey_row.h"
#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyLayout {
 public:
  // The plot's margins; the pixel map's three columns sit right of the plot.
  static constexpr float kLeftMargin = 150;
  static constexpr float kTopMargin = 58;
  static constexpr float kBottomMargin = 40;
  static constexpr float kPixelMapColumn = 18;
  static constexpr float kPixelMapGap = 10;
  static constexpr float kRightMargin = kPixelMapGap + 3 * kPixelMapColumn + 8;
  // Dense frames lay rows out on at most this many threads.
  static constexpr size_t kMaxLayoutThreads = 8;

  struct Options {
    uint32_t bins = 100;          // at least 1
    float min_band_px = 2.0f;     // narrower compute operators are merged
    float dense_row_px = 10.0f;   // thinner rows are rasterised
    float chart_row_px = 30.0f;   // rows this tall get the FLOPs/memory line
    uint32_t layout_threads = 0;  // dense frames; 0: one per core, at most 8
  };

  // What is shown where: the widget's size, the plot inside the margins and
  // the time range across it, on the aligned or the raw clocks.
  struct View {
    int width = 1000;
    int height = 600;
    RectF plot;
    int64_t start = 0;
    int64_t end = 1;
    bool raw = false;

    // At least 320 x 200; the plot is what the margins leave.
    void Resize(int new_width, int new_height);
    float TimeToX(int64_t t) const;
    int64_t XToTime(float x) const;
    // The left edge of the pixel map's column 0 (FLOPs), 1 (FLOP/s) or 2 (memory).
    float PixelMapX(int column) const {
      return plot.x + plot.w + kPixelMapGap + kPixelMapColumn * static_cast<float>(column);
    }
  };

  struct FrameStats {
    size_t rows = 0;
    size_t individual_operators = 0;
    size_t merged_bins = 0;
    size_t joins = 0;
    bool dense = false;
    size_t steps_shown = 0;  // steps in the visible range (step axis)
    size_t merged_comm_bins = 0;
  };

  // Everything one frame shows; the pointers must outlive Lay().
  struct Frame {
    View view;
    int64_t origin_ns = 0;                  // the job's first operator on the displayed clock
    std::vector<MareyRow>* rows = nullptr;  // top to bottom; Lay sets axis_y
    const std::vector<const MareyTrack*>* tracks = nullptr;  // per row
    std::vector<int> stages;  // per row: its pipeline stage, -1 when several or unknown
    // Per row: its devices' values in the selected step (else the newest).
    std::vector<std::vector<const DeviceStepRecord*>> step_values;
    const std::map<uint64_t, StepRecord>* steps = nullptr;
    std::optional<uint64_t> selected_step;
    std::vector<uint32_t> focus_ranks;  // sorted: a focused alert's devices
    uint32_t focus_name = 0;            // its operator; 0: none
    std::optional<uint64_t> focus_step;
    size_t devices = 0;    // for the summary line
    size_t operators = 0;  // for the summary line
  };

  explicit MareyLayout(Options options);

  void Lay(const Frame& frame);

  const DrawList& list() const { return list_; }
  const FrameStats& stats() const { return stats_; }
  // The last frame's pitch of a full row (weight 1) in pixels.
  float pitch() const { return pitch_; }
  // The row laid out at y (the nearest one above or below the plot); 0
  // when none were.
  size_t RowAt(float y) const;
  // Whether the last frame merged bin `bin` of row `row` (row < rows laid out).
  bool merged(size_t row, uint32_t bin) const { return row_merged_[row][bin] != 0; }
  const Options& options() const { return options_; }

 private:
  // What a row put on screen, for joining it with the next row.
  struct RowLayout;

  std::vector<MareyRow>& rows() const { return *frame_->rows; }
  // Lays out one row: rects into the draw list, or pixels into `line`
  // (dense mode, one colour per plot column); counts into `stats`. Dense
  // rows may be laid out concurrently (they touch only their own state).
  void LayoutRow(size_t index, RowLayout* layout, std::vector<Color>* line, FrameStats* stats);
  // Dense mode: every row into its pixel rows of the image, in parallel.
  void LayoutDenseRows();
  void EnsureImage();
  // Joins the operators of two rows that share a key, and with
  // `merged_bins` (adjacent rows) their merged bins and smoothed bands; with
  // `collectives_only`, only NCCL kernels.
  void AddJoins(const RowLayout& upper, const RowLayout& lower, float y_top, float y_bottom,
                bool same_stage, bool collectives_only = false, bool merged_bins = true);
  // Half the height of a row's bands.
  float BandHalf(size_t index) const;
  // Whether rows a < b belong to one device (consecutive device rows of one rank).
  bool SameDevice(size_t a, size_t b) const;
  void AddAxes();
  // Step numbers under the plot and step boundaries (alternate steps
  // tinted) behind the bands, on the aligned clock.
  void AddStepAxis();
  void AddPixelMap();
  void AddLineCharts(size_t index, float axis_y, float height);
  void AddLegend();

  Options options_;
  const Frame* frame_ = nullptr;  // during Lay()
  View view_;
  DrawList list_;
  FrameStats stats_;
  float pitch_ = 0;
  std::vector<float> row_tops_;                   // the last frame's, for RowAt
  std::vector<std::vector<uint8_t>> row_merged_;  // per row, per bin: merged?
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_LAYOUT_H_
