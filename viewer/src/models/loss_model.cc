#include "trainscope/viewer/loss_model.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

namespace trainscope::viewer {
namespace {

// The largest finite value: one inf or NaN must not flatten every map.
float FiniteMax(const std::vector<float>& values) {
  float max = 0;
  for (float v : values) {
    if (std::isfinite(v)) max = std::max(max, v);
  }
  return max;
}

bool WellFormed(const LayerMapRecord& map) {
  const size_t size = size_t{map.height} * map.width;
  return size > 0 && map.contribution.size() == size && map.reduction.size() == size;
}

const std::vector<ItemSnapshotRecord>& NoSnapshots() {
  static const std::vector<ItemSnapshotRecord> kNone;
  return kNone;
}

}  // namespace

LossModel::LossModel(Options options) : options_(options) {
  options_.max_snapshots_per_item = std::max<size_t>(1, options_.max_snapshots_per_item);
}

void LossModel::Load(const LossData& data) {
  state_ = data.state;
  snapshots_.clear();
  fetched_.clear();
  for (const auto& [item, snapshots] : data.snapshots) {
    std::vector<ItemSnapshotRecord>& list = snapshots_[item];
    for (const ItemSnapshotRecord& s : snapshots) Insert(&list, s);
    fetched_.insert(item);
  }
  chosen_.reset();
  chosen_explicitly_ = false;
  pinned_iteration_.reset();
  if (has_data()) chosen_ = Cells().front().item;
  Changed();
}

void LossModel::ClearData() {
  state_.reset();
  snapshots_.clear();
  fetched_.clear();
  if (!chosen_explicitly_) chosen_.reset();
  Changed();
}

void LossModel::SetState(LossStateRecord state) {
  state_ = std::move(state);
  if (!chosen_.has_value() && has_data()) chosen_ = Cells().front().item;
  // Snapshots of items that left the list go (the chosen one stays): what is
  // kept is bounded by the list, not by how long the job has run.
  for (auto it = snapshots_.begin(); it != snapshots_.end();) {
    if (it->first != chosen_ && FindItem(it->first) == nullptr) {
      fetched_.erase(it->first);
      it = snapshots_.erase(it);
    } else {
      ++it;
    }
  }
  Changed();
}

void LossModel::SetItemSnapshots(uint64_t item, std::vector<ItemSnapshotRecord> snapshots) {
  std::vector<ItemSnapshotRecord>& list = snapshots_[item];
  for (ItemSnapshotRecord& s : snapshots) {
    if (s.item == item) Insert(&list, std::move(s));
  }
  fetched_.insert(item);
  Changed();
}

void LossModel::AddSnapshot(ItemSnapshotRecord snapshot) {
  // Others are dropped: choosing one later fetches its whole history anyway.
  if (snapshot.item != chosen_ && fetched_.count(snapshot.item) == 0) return;
  Insert(&snapshots_[snapshot.item], std::move(snapshot));
  Changed();
}

void LossModel::Insert(std::vector<ItemSnapshotRecord>* list, ItemSnapshotRecord snapshot) const {
  auto at = std::lower_bound(
      list->begin(), list->end(), snapshot.iteration,
      [](const ItemSnapshotRecord& s, uint64_t iteration) { return s.iteration < iteration; });
  if (at != list->end() && at->iteration == snapshot.iteration) {
    *at = std::move(snapshot);
  } else {
    list->insert(at, std::move(snapshot));
  }
  if (list->size() > options_.max_snapshots_per_item) {
    list->erase(list->begin(),
                list->end() - static_cast<std::ptrdiff_t>(options_.max_snapshots_per_item));
  }
}

bool LossModel::Choose(uint64_t item) {
  if (chosen_ != item) {
    chosen_ = item;
    pinned_iteration_.reset();
  }
  chosen_explicitly_ = true;
  Changed();
  return FindItem(item) != nullptr;
}

bool LossModel::NeedsSnapshots() const {
  return chosen_.has_value() && fetched_.count(*chosen_) == 0;
}

const std::vector<ItemSnapshotRecord>& LossModel::ChosenSnapshots() const {
  if (!chosen_.has_value()) return NoSnapshots();
  auto it = snapshots_.find(*chosen_);
  return it == snapshots_.end() ? NoSnapshots() : it->second;
}

std::optional<size_t> LossModel::Index() const {
  const std::vector<ItemSnapshotRecord>& list = ChosenSnapshots();
  if (list.empty()) return std::nullopt;
  if (!pinned_iteration_.has_value()) return list.size() - 1;
  // The newest snapshot at or before the pinned iteration (it may have been
  // evicted); the oldest when all are after it.
  auto after = std::upper_bound(
      list.begin(), list.end(), *pinned_iteration_,
      [](uint64_t iteration, const ItemSnapshotRecord& s) { return iteration < s.iteration; });
  return after == list.begin() ? 0 : static_cast<size_t>(after - list.begin()) - 1;
}

size_t LossModel::SetIterationIndex(int64_t index) {
  const std::vector<ItemSnapshotRecord>& list = ChosenSnapshots();
  if (list.empty()) return 0;
  const int64_t last = static_cast<int64_t>(list.size()) - 1;
  const size_t clamped = static_cast<size_t>(std::clamp<int64_t>(index, 0, last));
  // The right end follows the newest snapshot as new ones arrive.
  std::optional<uint64_t> pinned;
  if (static_cast<int64_t>(clamped) != last) pinned = list[clamped].iteration;
  if (pinned != pinned_iteration_) {
    pinned_iteration_ = pinned;
    Changed();
  }
  return clamped;
}

bool LossModel::SetIteration(uint64_t iteration) {
  const std::vector<ItemSnapshotRecord>& list = ChosenSnapshots();
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].iteration == iteration) {
      SetIterationIndex(static_cast<int64_t>(i));
      return true;
    }
  }
  return false;
}

void LossModel::FollowNewest() {
  if (!pinned_iteration_.has_value()) return;
  pinned_iteration_.reset();
  Changed();
}

const DifficultItemRecord* LossModel::FindItem(uint64_t item) const {
  if (!state_.has_value()) return nullptr;
  for (const DifficultItemRecord& record : state_->items) {
    if (record.item == item) return &record;
  }
  return nullptr;
}

std::vector<LossModel::Cell> LossModel::Cells() const {
  std::vector<Cell> cells;
  if (!state_.has_value()) return cells;
  for (const DifficultItemRecord& item : state_->items) {
    Cell cell;
    cell.item = item.item;
    cell.contribution = item.contribution;
    cell.label = item.label;
    cell.prediction = item.prediction;
    cell.rank = item.rank;
    cell.epochs_in_top = item.epochs_in_top;
    cell.snapshots = item.snapshots;
    cell.misclassified = item.label >= 0 && item.prediction >= 0 && item.label != item.prediction;
    cell.candidate = cell.misclassified || item.epochs_in_top >= options_.candidate_epochs;
    cell.chosen = chosen_ == item.item;
    cell.input = item.input;
    cell.history = item.history;
    cells.push_back(std::move(cell));
  }
  // The collector sends them sorted; sorting again keeps the grid right for
  // any source (ties: the lower item first, as the collector breaks them).
  std::stable_sort(cells.begin(), cells.end(), [](const Cell& a, const Cell& b) {
    return a.contribution != b.contribution ? a.contribution > b.contribution : a.item < b.item;
  });
  for (size_t i = 0; i < cells.size(); ++i) cells[i].place = static_cast<uint32_t>(i + 1);
  return cells;
}

void LossModel::SetMapScaling(MapScaling scaling) {
  if (scaling == map_scaling_) return;
  map_scaling_ = scaling;
  ++version_;
}

float LossModel::ScaleMax() const {
  float max = 0;
  for (const ItemSnapshotRecord& s : ChosenSnapshots()) {
    for (const LayerMapRecord& map : s.maps) {
      if (!WellFormed(map)) continue;
      max = std::max({max, FiniteMax(map.contribution), FiniteMax(map.reduction)});
    }
  }
  return max;
}

void LossModel::SetSelectionViewport(int width, int height) {
  if (width == selection_width_ && height == selection_height_) return;
  selection_width_ = width;
  selection_height_ = height;
  selection_version_ = UINT64_MAX;
}

const DrawList& LossModel::DrawSelection() {
  if (selection_version_ != version_) {
    selection_.Lay({.width = selection_width_,
                    .height = selection_height_,
                    .state = has_data() ? &*state_ : nullptr,
                    .cells = has_data() ? Cells() : std::vector<Cell>(),
                    .candidate_epochs = options_.candidate_epochs});
    selection_version_ = version_;
  }
  return selection_.list();
}

void LossModel::SetMonitoringViewport(int width, int height) {
  if (width == monitoring_width_ && height == monitoring_height_) return;
  monitoring_width_ = width;
  monitoring_height_ = height;
  monitoring_version_ = UINT64_MAX;
}

const DrawList& LossModel::DrawMonitoring() {
  if (monitoring_version_ != version_) {
    monitoring_.Lay({.width = monitoring_width_,
                     .height = monitoring_height_,
                     .frame = has_data() ? CurrentFrame() : std::nullopt,
                     .state = state_.has_value() ? &*state_ : nullptr,
                     .fetching = NeedsSnapshots()});
    monitoring_version_ = version_;
  }
  return monitoring_.list();
}

std::optional<uint64_t> LossModel::ItemOfAlert(const Alert& alert) {
  if (alert.rule != "difficult_item") return std::nullopt;
  return alert.item;
}

std::optional<LossModel::Frame> LossModel::CurrentFrame() const {
  if (!chosen_.has_value()) return std::nullopt;
  Frame frame;
  frame.item = *chosen_;
  for (const Cell& cell : Cells()) {
    if (cell.item == frame.item) frame.place = cell.place;
  }
  const std::vector<ItemSnapshotRecord>& list = ChosenSnapshots();
  const ItemSnapshotRecord* shown = nullptr;
  if (std::optional<size_t> index = Index()) {
    frame.index = *index;
    frame.count = list.size();
    shown = &list[*index];
    frame.epoch = shown->epoch;
    frame.iteration = shown->iteration;
    frame.rank = shown->rank;
    frame.label = shown->label;
    frame.prediction = shown->prediction;
    frame.contribution = shown->contribution;
    frame.input = shown->input;
  } else if (const DifficultItemRecord* item = FindItem(frame.item)) {
    frame.epoch = state_->epoch;
    frame.rank = item->rank;
    frame.label = item->label;
    frame.prediction = item->prediction;
    frame.contribution = item->contribution;
    frame.input = item->input;
  }
  // Columns in the configured layer order, then any map of a layer the list
  // did not name (a report from a differently configured rank).
  std::vector<std::string> layers;
  if (state_.has_value()) layers = state_->monitored_layers;
  if (shown != nullptr) {
    for (const LayerMapRecord& map : shown->maps) {
      if (std::find(layers.begin(), layers.end(), map.layer) == layers.end()) {
        layers.push_back(map.layer);
      }
    }
  }
  for (const std::string& layer : layers) {
    Column column;
    column.layer = layer;
    if (shown != nullptr) {
      for (const LayerMapRecord& map : shown->maps) {
        if (map.layer != layer) continue;
        column.height = map.height;
        column.width = map.width;
        column.present = WellFormed(map);
        if (column.present) {
          column.contribution = map.contribution;
          column.reduction = map.reduction;
          column.contribution_max = FiniteMax(map.contribution);
          column.reduction_max = FiniteMax(map.reduction);
          frame.frame_max =
              std::max({frame.frame_max, column.contribution_max, column.reduction_max});
        }
        break;
      }
    }
    frame.columns.push_back(std::move(column));
  }
  frame.scaling = map_scaling_;
  frame.scale_max = map_scaling_ == MapScaling::kPerIteration ? frame.frame_max : ScaleMax();
  return frame;
}

}  // namespace trainscope::viewer
