// The loss-contribution views (Lee, "Loss-contribution-based in situ
// visualization for neural network training"): the job-wide list of
// "difficult items" of the current epoch and, for the item chosen for
// monitoring, its contribution/reduction-map snapshots by iteration.
//
// Selection View: one cell per item, highest contribution first, with its
// thumbnail, label, prediction, contribution, rank and epochs in the top; a
// cell is flagged as a candidate mislabeled item when its label differs from
// its prediction or it stayed in the top for `candidate_epochs` epochs.
//
// Monitoring View: for the chosen item and the slider's iteration, the input
// image, label and output (prediction), and one column per monitored layer
// with C_h on top and R_h below. Every map of the item (all layers, C and R,
// all of its snapshots) shares ONE colour scale, 0 .. the largest value in
// any of them: moving the slider then compares iterations on the same scale,
// so a map that fades means the contribution fell, not that the scale moved.
//
// The chosen item defaults to the top item of the first list seen and stays
// until Choose() picks another. The slider follows the newest snapshot until
// it is moved, then stays on its iteration.
//
// Usage:
//   LossModel loss;
//   loss.Load(job_data.loss);                 // a stored job or a fresh snapshot
//   loss.SetState(state);                     // live "<job>/loss": replaces the list
//   loss.AddSnapshot(snapshot);               // live "<job>/maps"
//   if (loss.Choose(1432) && loss.NeedsSnapshots()) ask the source for item 1432;
//   loss.SetItemSnapshots(1432, snapshots);   // the source's answer
//   loss.SetIterationIndex(3);                // the slider
//   loss.SetSelectionViewport(1200, 500);
//   const DrawList& grid = loss.DrawSelection();
//   std::optional<uint64_t> item = loss.ItemAt(x, y);   // a click
//   loss.SetMonitoringViewport(1200, 500);
//   const DrawList& maps = loss.DrawMonitoring();
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_LOSS_MODEL_H_
#define TRAINSCOPE_VIEWER_LOSS_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/loss_drawing.h"
#include "trainscope/viewer/loss_monitoring_layout.h"
#include "trainscope/viewer/loss_selection_layout.h"
#include "trainscope/viewer/loss_view_records.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class LossModel {
 public:
  struct Options {
    // The difficult_item rule's default consecutive_epochs.
    uint32_t candidate_epochs = 3;
    // Snapshots kept per item (the collector keeps 64; live ones add up).
    size_t max_snapshots_per_item = 256;
  };

  // What the views show and where their layouts put it (loss_view_records.h).
  using Cell = LossCell;
  using Column = LossColumn;
  using Frame = LossFrame;
  using MonitoringGeometry = LossMonitoringGeometry;

  explicit LossModel(Options options);
  LossModel() : LossModel(Options{}) {}

  // Replaces everything with what a source loaded; the choice goes back to
  // the top item.
  void Load(const LossData& data);
  // A new snapshot of the collector: drops the list and the snapshots but
  // keeps an explicit choice.
  void ClearData();
  // Replaces the job-wide list (live updates replace, never merge).
  void SetState(LossStateRecord state);
  // A source's answer for `item`: merged with what arrived live meanwhile.
  void SetItemSnapshots(uint64_t item, std::vector<ItemSnapshotRecord> snapshots);
  // A live snapshot: kept for the chosen item and for items already fetched.
  void AddSnapshot(ItemSnapshotRecord snapshot);

  // Chooses the item to monitor; the slider goes to its newest snapshot.
  // Returns whether the item is in the current list.
  bool Choose(uint64_t item);
  std::optional<uint64_t> chosen_item() const { return chosen_; }
  // The chosen item's snapshots have not been fetched from the source yet.
  bool NeedsSnapshots() const;

  // The slider: clamped to the chosen item's snapshots; returns the position.
  size_t SetIterationIndex(int64_t index);
  // Moves the slider to the snapshot of `iteration`; false when the item has
  // none at that iteration (nothing changes).
  bool SetIteration(uint64_t iteration);
  void FollowNewest();
  bool following_newest() const { return !pinned_iteration_.has_value(); }
  // How the maps are coloured (default per iteration; see MapScaling).
  void SetMapScaling(MapScaling scaling);
  MapScaling map_scaling() const { return map_scaling_; }

  bool has_data() const { return state_.has_value() && !state_->items.empty(); }
  const std::optional<LossStateRecord>& state() const { return state_; }
  const DifficultItemRecord* FindItem(uint64_t item) const;
  // The chosen item's snapshots, oldest first (empty when none).
  const std::vector<ItemSnapshotRecord>& ChosenSnapshots() const;
  std::vector<Cell> Cells() const;
  // Nullopt when no item is chosen (no data yet).
  std::optional<Frame> CurrentFrame() const;
  uint64_t version() const { return version_; }

  // Selection View, laid out by LossSelectionLayout when the data changed.
  void SetSelectionViewport(int width, int height);
  const DrawList& DrawSelection();
  const std::vector<Cell>& cell_geometry() const { return selection_.cells(); }
  // The grid's height: more than the viewport when the cells do not fit at
  // a readable size (the view scrolls).
  float selection_content_height() const { return selection_.content_height(); }
  std::optional<uint64_t> ItemAt(float x, float y) const { return selection_.ItemAt(x, y); }
  std::string TooltipAt(float x, float y) const { return selection_.TooltipAt(x, y); }

  // Monitoring View, laid out by LossMonitoringLayout when the data changed.
  void SetMonitoringViewport(int width, int height);
  const DrawList& DrawMonitoring();
  const MonitoringGeometry& monitoring_geometry() const { return monitoring_.geometry(); }

  // The item a difficult_item alert is about (Alert.item), so a click on the
  // alert can show it; nullopt for any other alert.
  static std::optional<uint64_t> ItemOfAlert(const Alert& alert);

  // The views' ramps and colours (loss_drawing.h).
  static Color ContributionColor(float t) { return loss_drawing::ContributionColor(t); }
  static Color ReductionColor(float t) { return loss_drawing::ReductionColor(t); }
  static constexpr Color kCandidateColor = loss_drawing::kCandidateColor;
  static constexpr Color kChosenColor = loss_drawing::kChosenColor;
  static constexpr Color kChosenFill = loss_drawing::kChosenFill;
  static constexpr const char* kNoDataText = loss_drawing::kNoDataText;

 private:
  void Changed() { ++version_; }
  std::vector<ItemSnapshotRecord>* Snapshots(uint64_t item);
  // Inserts by iteration; a snapshot of an iteration already kept replaces it.
  void Insert(std::vector<ItemSnapshotRecord>* list, ItemSnapshotRecord snapshot) const;
  std::optional<size_t> Index() const;
  float ScaleMax() const;

  Options options_;
  std::optional<LossStateRecord> state_;
  std::optional<uint64_t> chosen_;
  bool chosen_explicitly_ = false;
  std::map<uint64_t, std::vector<ItemSnapshotRecord>> snapshots_;  // by item
  std::set<uint64_t> fetched_;                                     // items the source answered for
  std::optional<uint64_t> pinned_iteration_;
  uint64_t version_ = 0;
  MapScaling map_scaling_ = MapScaling::kPerIteration;

  int selection_width_ = 800;
  int selection_height_ = 500;
  uint64_t selection_version_ = UINT64_MAX;
  LossSelectionLayout selection_;

  int monitoring_width_ = 800;
  int monitoring_height_ = 500;
  uint64_t monitoring_version_ = UINT64_MAX;
  LossMonitoringLayout monitoring_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LOSS_MODEL_H_
