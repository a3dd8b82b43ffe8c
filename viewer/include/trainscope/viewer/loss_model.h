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

  // One cell of the Selection View.
  struct Cell {
    uint64_t item = 0;
    uint32_t place = 0;  // 1-based, in contribution order
    double contribution = 0;
    int32_t label = -1;
    int32_t prediction = -1;
    uint32_t rank = 0;
    uint32_t epochs_in_top = 0;
    uint32_t snapshots = 0;
    bool misclassified = false;  // label and prediction known and different
    bool candidate = false;      // misclassified or epochs_in_top >= candidate_epochs
    bool chosen = false;         // shown in the Monitoring View
    ThumbnailRecord input;
    std::vector<EpochScoreRecord> history;
    // Set by DrawSelection.
    RectF rect;
    RectF thumb_rect;
  };

  // One monitored layer in the Monitoring View.
  struct Column {
    std::string layer;
    uint32_t height = 0;
    uint32_t width = 0;
    bool present = false;  // this snapshot has a well-formed map for the layer
    std::vector<float> contribution;
    std::vector<float> reduction;
    float contribution_max = 0;
    float reduction_max = 0;
    // Set by DrawMonitoring.
    RectF contribution_rect;
    RectF reduction_rect;
  };

  // What the Monitoring View shows for the chosen item at the slider.
  struct Frame {
    uint64_t item = 0;
    std::optional<uint32_t> place;  // in the current list, 1-based
    size_t index = 0;               // slider position, 0 = oldest snapshot
    size_t count = 0;               // snapshots of the item; 0: none yet
    uint32_t epoch = 0;
    uint64_t iteration = 0;
    uint32_t rank = 0;
    int32_t label = -1;
    int32_t prediction = -1;
    double contribution = 0;
    ThumbnailRecord input;
    std::vector<Column> columns;
    float scale_max = 0;  // shared by every map of the item, all snapshots
    float frame_max = 0;  // the largest value at this iteration
  };

  // Where DrawMonitoring put things (for tests and hit tests).
  struct MonitoringGeometry {
    RectF input_rect;
    RectF colorbar_contribution;
    RectF colorbar_reduction;
    std::vector<Column> columns;  // with their rects
  };

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

  bool has_data() const { return state_.has_value() && !state_->items.empty(); }
  const std::optional<LossStateRecord>& state() const { return state_; }
  const DifficultItemRecord* FindItem(uint64_t item) const;
  // The chosen item's snapshots, oldest first (empty when none).
  const std::vector<ItemSnapshotRecord>& ChosenSnapshots() const;
  std::vector<Cell> Cells() const;
  // Nullopt when no item is chosen (no data yet).
  std::optional<Frame> CurrentFrame() const;
  uint64_t version() const { return version_; }

  // Selection View layout (loss_selection_layout.cc).
  void SetSelectionViewport(int width, int height);
  const DrawList& DrawSelection();
  const std::vector<Cell>& cell_geometry() const { return cells_; }
  // The grid's height: more than the viewport when the cells do not fit at
  // a readable size (the view scrolls).
  float selection_content_height() const { return selection_content_height_; }
  std::optional<uint64_t> ItemAt(float x, float y) const;
  std::string TooltipAt(float x, float y) const;

  // Monitoring View layout (loss_monitoring_layout.cc).
  void SetMonitoringViewport(int width, int height);
  const DrawList& DrawMonitoring();
  const MonitoringGeometry& monitoring_geometry() const { return monitoring_; }

  // The item a difficult_item alert is about (Alert.item), so a click on the
  // alert can show it; nullopt for any other alert.
  static std::optional<uint64_t> ItemOfAlert(const Alert& alert);

  // Sequential ramps, t in [0, 1]: white to dark red for C, white to dark
  // blue for R (ColorBrewer Reds and Blues, perceptually ordered).
  static Color ContributionColor(float t);
  static Color ReductionColor(float t);
  static constexpr Color kCandidateColor = Rgba(215, 25, 28);
  static constexpr Color kChosenColor = Rgba(33, 102, 172);
  static constexpr Color kChosenFill = Rgba(222, 235, 247);
  static constexpr const char* kNoDataText =
      "no loss-contribution data: start trainscope.LossContribution in the training script";

 private:
  void Changed() { ++version_; }
  std::vector<ItemSnapshotRecord>* Snapshots(uint64_t item);
  // Inserts by iteration; a snapshot of an iteration already kept replaces it.
  void Insert(std::vector<ItemSnapshotRecord>* list, ItemSnapshotRecord snapshot) const;
  std::optional<size_t> Index() const;
  float ScaleMax() const;
  void BuildSelection();
  void BuildMonitoring();

  Options options_;
  std::optional<LossStateRecord> state_;
  std::optional<uint64_t> chosen_;
  bool chosen_explicitly_ = false;
  std::map<uint64_t, std::vector<ItemSnapshotRecord>> snapshots_;  // by item
  std::set<uint64_t> fetched_;                                     // items the source answered for
  std::optional<uint64_t> pinned_iteration_;
  uint64_t version_ = 0;

  int selection_width_ = 800;
  int selection_height_ = 500;
  uint64_t selection_version_ = UINT64_MAX;
  DrawList selection_list_;
  std::vector<Cell> cells_;
  float selection_content_height_ = 0;

  int monitoring_width_ = 800;
  int monitoring_height_ = 500;
  uint64_t monitoring_version_ = UINT64_MAX;
  DrawList monitoring_list_;
  MonitoringGeometry monitoring_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LOSS_MODEL_H_
