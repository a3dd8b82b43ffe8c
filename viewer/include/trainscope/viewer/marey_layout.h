// Lays out one frame of the Marey graph (see MareyModel) as a DrawList: it
// places the rows (their share of the plot's height by weight) and draws
// each row's operators as bands or pixels (compute merged into density bins
// where it is denser than the row's mean or narrower than `min_band_px`;
// rows thinner than `dense_row_px` rasterised into one image on a few
// threads). Its collaborators draw the rest: MareyAxes (time and step axes,
// legend), MareyJoins (the bands between rows), MareyLineCharts (FLOPs and
// memory per step), MareyPixelMap (the selected step's values per row). It
// holds no data: MareyModel hands it a Frame (the rows, their tracks, the
// steps, the view) and reads back what its hit tests need (the row pitch,
// which bins were merged).
//
// Usage:
//   MareyLayout layout({.bins = 100});
//   MareyView view;
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
#include <utility>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/marey_joins.h"
#include "trainscope/viewer/marey_row.h"
#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/marey_view.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyLayout {
 public:
  // Dense frames lay rows out on at most this many threads.
  static constexpr size_t kMaxLayoutThreads = 8;

  struct Options {
    uint32_t bins = 100;          // at least 1
    float min_band_px = 2.0f;     // narrower compute operators are merged
    float dense_row_px = 10.0f;   // thinner rows are rasterised
    float chart_row_px = 30.0f;   // rows this tall get the FLOPs/memory line
    uint32_t layout_threads = 0;  // dense frames; 0: one per core, at most 8
  };

  // What is shown where (MareyView).
  using View = MareyView;

  struct FrameStats {
    size_t rows = 0;
    size_t individual_operators = 0;
    size_t merged_bins = 0;
    size_t joins = 0;
    bool dense = false;
    size_t steps_shown = 0;  // steps in the visible range (step axis)
    size_t merged_comm_bins = 0;
    size_t link_transfers = 0;  // the selected link's sends joined to their receives
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
    bool focus_rows_tinted = true;  // false: only the operator is outlined
    // Linked selection (SelectionState): these devices' rows are tinted and
    // their labels blue; the transfers between the link's two devices (both
    // directions) are outlined and each send joined to its receive.
    std::vector<uint32_t> selected_ranks;  // sorted
    std::optional<std::pair<uint32_t, uint32_t>> selected_link;
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
  using RowLayout = MareyJoins::RowItems;

  std::vector<MareyRow>& rows() const { return *frame_->rows; }
  // Lays out one row: rects into the draw list, or pixels into `line`
  // (dense mode, one colour per plot column); counts into `stats`. Dense
  // rows may be laid out concurrently (they touch only their own state).
  void LayoutRow(size_t index, RowLayout* layout, std::vector<Color>* line, FrameStats* stats);
  // Dense mode: every row into its pixel rows of the image, in parallel.
  void LayoutDenseRows();
  void EnsureImage();
  // Half the height of a row's bands.
  float BandHalf(size_t index) const;
  // Whether rows a < b belong to one device (consecutive device rows of one rank).
  bool SameDevice(size_t a, size_t b) const;
  Options options_;
  const Frame* frame_ = nullptr;  // during Lay()
  View view_;
  DrawList list_;
  FrameStats stats_;
  float pitch_ = 0;
  std::vector<float> row_tops_;                   // the last frame's, for RowAt
  std::vector<std::vector<uint8_t>> row_merged_;  // per row, per bin: merged?
  // One end of a transfer of the selected link, drawn this frame.
  struct LinkEnd {
    uint64_t key;  // a send and its receive share it
    bool send;
    float x0, x1, y;
  };
  std::vector<LinkEnd> link_ends_;
  // Joins each drawn send of the selected link to its receive.
  void AddLinkJoins();
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_LAYOUT_H_
