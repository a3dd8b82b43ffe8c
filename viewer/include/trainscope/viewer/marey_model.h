// The enhanced Marey's graph (Wei et al.): one horizontal time axis per
// device; each operator a band on its device's axis, joined to the same
// operator on the adjacent axis (its start line and end line), coloured by
// class (compute green, collective yellow, send purple, recv blue).
//
// GPU work: a device that ran kernels gets one axis per GPU stream (kernels
// green, NCCL kernels yellow, copies and memsets teal) under a thin axis of
// its CPU operators (hidden on demand: SetShowCpuRows). Joins go from each
// row to the rows of the same kind (CPU or GPU) of the device above: one
// collective's NCCL kernels are joined across devices whichever streams
// they ran on, other kernels and copies only to the same stream.
//
// The model holds the view state (zoom, grouping, filter, focus), decides
// the rows and answers hit tests (through MareyHitTester); the data (operators per device in
// MareyTrack, steps, alerts) is MareyTrackStore's, the visible range
// MareyTimeWindow's, and MareyLayout turns it all into a frame. What is
// precomputed so a frame is only painting (see DrawList):
//  - horizontal aggregation: ~`bins` density bins over the visible range per
//    row; compute operators are merged into one band where a bin is denser
//    than the row's mean (the paper's rule) or where its operators would be
//    narrower than `min_band_px` (level of detail); communication is never
//    merged;
//  - vertical aggregation by stage or host: three rows per group holding
//    each operator's min / avg / max start and end over the group's devices,
//    with the member devices shown when the group is expanded (a tree);
//  - dense rows: when a row is thinner than `dense_row_px`, rows are
//    rasterised into one pixel image (no joining bands), so 1,024 devices
//    cost one pixel per column per row;
//  - a flattened line chart of FLOPs and peak memory per step along each
//    device's axis, a pixel map of FLOPs, FLOP/s and peak memory per device
//    for the selected step, and a red cross at the start of the axis of a
//    device with an alert.
// Hovering is answered from the data (HitTest), not from pixels.
//
// Usage:
//   NameTable names;
//   MareyModel marey(&names);
//   marey.AddOperators(ops);           // any order; sorted lazily
//   marey.AddStep(step_record);        // for the line chart and pixel map
//   marey.SetViewport(1200, 700);
//   marey.BrushTo(x0, x1);             // or ZoomAt / PanBy / SetTimeRange
//   const DrawList& list = marey.Draw();
//   std::optional<MareyModel::Hit> hit = marey.HitTest(x, y);
//
// Threading: not thread-safe; the UI thread owns it. Draw() lays dense rows
// out on a few short-lived worker threads (MareyLayout: disjoint rows and
// pixel rows), joined before it returns.
#ifndef TRAINSCOPE_VIEWER_MAREY_MODEL_H_
#define TRAINSCOPE_VIEWER_MAREY_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/marey_group.h"
#include "trainscope/viewer/marey_hit_tester.h"
#include "trainscope/viewer/marey_layout.h"
#include "trainscope/viewer/marey_row.h"
#include "trainscope/viewer/marey_time_window.h"
#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyModel {
 public:
  enum class Grouping { kNone, kStage, kHost };

  struct Options {
    uint32_t bins = 100;
    float min_band_px = 2.0f;           // narrower compute operators are merged
    float dense_row_px = 10.0f;         // thinner rows are rasterised
    float chart_row_px = 30.0f;         // rows this tall get the FLOPs/memory line
    size_t max_operators = 20'000'000;  // oldest steps are evicted past it
    float cpu_row_weight = 0.4f;        // a GPU device's CPU row, relative to a stream's
    uint32_t layout_threads = 0;        // dense frames; 0: one per core, at most 8
  };

  using RowKind = MareyRowKind;
  using Row = MareyRow;

  using Hit = MareyHitTester::Hit;

  using FrameStats = MareyLayout::FrameStats;

  explicit MareyModel(const NameTable* names);
  MareyModel(const NameTable* names, Options options);
  ~MareyModel();
  MareyModel(const MareyModel&) = delete;
  MareyModel& operator=(const MareyModel&) = delete;

  // Data.
  void SetDevices(const std::vector<DeviceInfo>& devices);
  void AddOperators(const std::vector<OperatorRecord>& operators);
  void AddStep(const StepRecord& step);
  void SetAlerts(const std::vector<Alert>& alerts);
  void Clear();

  // View.
  void SetViewport(int width, int height);
  // The visible range (MareyTimeWindow): a range chosen by hand stays put;
  // following shows the newest N steps as they arrive (the default); around
  // a step shows N steps centred on it.
  void SetTimeRange(int64_t start_ns, int64_t end_ns);
  // The whole run (double-click); zoomed out that far, operators merge into
  // density bins.
  void ResetZoom();
  void FollowNewest(uint32_t steps = 0);
  void ShowAroundStep(uint64_t step, uint32_t steps = 0);
  // "Reset zoom": the default number of steps, the newest ones when the
  // selected step is the newest (or none), else around the selected step.
  void ShowReadableRange();
  const MareyTimeWindow& time_window() const { return window_; }
  // factor > 1 zooms in around pixel x; following or around a step it shows
  // `factor` times fewer steps instead, and keeps following.
  void ZoomAt(float x, double factor);
  void PanBy(float dx_pixels);
  void BrushTo(float x0, float x1);
  void SetRawTimestamps(bool raw);
  // A device with GPU streams shows its CPU operators as a thin row (true)
  // or only its streams (false). Devices without GPU work always show them.
  void SetShowCpuRows(bool show);
  bool show_cpu_rows() const { return show_cpu_rows_; }
  void SetGrouping(Grouping grouping);
  void SetExpanded(const std::string& group_key, bool expanded);
  void ToggleExpanded(const std::string& group_key);
  // Only these ranks (empty: all).
  void SetRankFilter(const std::vector<uint32_t>& ranks);
  void SetSelectedStep(std::optional<uint64_t> step);
  // Linked selection (SelectionState's devices and link): their rows are
  // tinted, the link's transfers outlined and joined send to receive.
  void SetSelection(const std::set<uint32_t>& ranks,
                    std::optional<std::pair<uint32_t, uint32_t>> link);
  // Zooms to the alert's operator in its step and highlights its devices.
  void FocusOnAlert(const Alert& alert);
  // Whether a focus tints its devices' rows: an alert's or a search match's
  // few devices stand out that way; an operator picked from the
  // top-operators table runs on every device, so only its bands are outlined.
  enum class FocusRows { kTinted, kPlain };
  // Highlights the rows of `ranks` (unless kPlain) and, when `name` is not 0,
  // outlines that operator's bands on them (in `step`, when set); zooms so
  // that `extent` (on the displayed clock) fills about a third of the plot,
  // when set. A search match, or an alert's operator (FocusOnAlert).
  void FocusOn(std::vector<uint32_t> ranks, uint32_t name, std::optional<uint64_t> step,
               std::optional<std::pair<int64_t, int64_t>> extent,
               FocusRows rows = FocusRows::kTinted);
  void ClearFocus();
  // Clears a focused alert unless it is about `step` (another step was
  // selected: its highlight is stale).
  void ClearFocusUnlessStep(uint64_t step);

  const DrawList& Draw();
  const std::vector<Row>& Rows();
  std::optional<Hit> HitTest(float x, float y);
  FrameStats frame_stats() const { return layout_.stats(); }

  int64_t view_start() const { return view_.start; }
  int64_t view_end() const { return view_.end; }
  int64_t origin_ns() const;  // the job's first operator on the displayed clock
  bool raw_timestamps() const { return view_.raw; }
  Grouping grouping() const { return grouping_; }
  RectF plot_rect() const { return view_.plot; }
  float TimeToX(int64_t t) const;
  int64_t XToTime(float x) const;
  // The data (read-only): what a search looks through (SearchModel).
  const MareyTrackStore& store() const { return store_; }
  size_t operator_count() const { return store_.operator_count(); }
  uint64_t evicted_operators() const { return store_.evicted_operators(); }
  const Options& options() const { return options_; }
  // Changes whenever a redraw is needed.
  uint64_t version() const { return version_; }

 private:
  void MarkDirty();
  // Rows and groups are rebuilt when the store's tracks changed.
  void SyncWithStore();
  void BuildGroups();
  void BuildRows();
  // Resolves the automatic time range and lays the frame out.
  void Layout();
  // The pipeline stage a row belongs to; -1 when it spans stages or is unknown.
  int RowStage(size_t index) const;
  // The row's devices' values in the selected step, else the newest.
  std::vector<const DeviceStepRecord*> StepValues(size_t index) const;

  const NameTable* names_;
  Options options_;

  MareyTrackStore store_;
  uint64_t store_layout_version_ = 0;  // what the rows were built from
  uint64_t store_data_version_ = 0;    // what the groups were built from
  std::map<std::string, std::unique_ptr<MareyGroup>> groups_;

  MareyView view_;
  MareyTimeWindow window_;
  Grouping grouping_ = Grouping::kNone;
  bool show_cpu_rows_ = true;
  std::map<std::string, bool> expanded_;
  std::vector<uint32_t> rank_filter_;
  std::optional<uint64_t> selected_step_;
  std::vector<uint32_t> focus_ranks_;
  uint32_t focus_name_ = 0;
  std::optional<uint64_t> focus_step_;
  bool focus_rows_tinted_ = true;
  std::vector<uint32_t> selected_ranks_;  // sorted
  std::optional<std::pair<uint32_t, uint32_t>> selected_link_;

  bool groups_dirty_ = true;
  bool rows_dirty_ = true;
  bool layout_dirty_ = true;
  uint64_t version_ = 0;

  std::vector<Row> rows_;
  std::vector<const MareyTrack*> row_tracks_;
  std::vector<std::vector<const DeviceStepRecord*>> row_step_values_;  // the last Layout's
  MareyLayout layout_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_MODEL_H_
