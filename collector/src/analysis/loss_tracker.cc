#include "trainscope/collector/analysis/loss_tracker.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace trainscope::collector {

LossTracker::LossTracker(LossTrackerOptions options) : options_(options) {}

LossTracker::Changes LossTracker::OnReport(uint32_t rank, const v1::LossReport& report) {
  Changes changes;
  live_ranks_.insert(rank);
  uint32_t& rank_epoch = rank_epoch_[rank];
  rank_epoch = std::max(rank_epoch, report.epoch());
  if (!report.selection_layer().empty()) selection_layer_ = report.selection_layer();
  if (report.monitored_layers_size() > 0) {
    monitored_layers_.assign(report.monitored_layers().begin(), report.monitored_layers().end());
  }
  // Thumbnails go to the item, not into the lists merged and copied around.
  for (const v1::ItemScore& score : report.top()) {
    if (score.has_input()) {
      KeepThumbnail(score.item(), score.input());
      changes.state_changed = true;
    }
  }
  // A report for an epoch already closed (a late rank) changes nothing merged.
  if (!last_closed_.has_value() || report.epoch() > *last_closed_) {
    Epoch& epoch = epochs_[report.epoch()];
    epoch.top_n = std::max(epoch.top_n, report.top_n());
    epoch.iteration = std::max(epoch.iteration, report.iteration());
    RankList& list = epoch.ranks[rank];
    if (report.iteration() >= list.iteration || report.epoch_complete()) {
      list.top.assign(report.top().begin(), report.top().end());
      for (v1::ItemScore& score : list.top) {
        score.set_rank(rank);
        score.clear_input();
      }
      list.iteration = report.iteration();
      list.complete = list.complete || report.epoch_complete();
    }
    changes.state_changed = true;
  }
  for (const v1::ItemSnapshot& snapshot : report.snapshots()) {
    v1::ItemSnapshot kept = snapshot;
    kept.set_rank(rank);
    changes.snapshots.push_back(kept);
    KeepSnapshot(std::move(kept));
    changes.state_changed = true;
  }
  changes.closed = CloseFinishedEpochs();
  if (!changes.closed.empty()) changes.state_changed = true;
  return changes;
}

void LossTracker::OnRankJoined(uint32_t rank) { live_ranks_.insert(rank); }

LossTracker::Changes LossTracker::OnRankGone(uint32_t rank) {
  Changes changes;
  if (live_ranks_.erase(rank) == 0) return changes;
  changes.closed = CloseFinishedEpochs();
  changes.state_changed = !changes.closed.empty();
  return changes;
}

std::vector<v1::ItemScore> LossTracker::Merge(const Epoch& epoch) {
  std::unordered_map<uint64_t, const v1::ItemScore*> best;
  for (const auto& [rank, list] : epoch.ranks) {
    for (const v1::ItemScore& score : list.top) {
      auto [it, inserted] = best.emplace(score.item(), &score);
      if (!inserted && score.contribution() > it->second->contribution()) it->second = &score;
    }
  }
  std::vector<v1::ItemScore> merged;
  merged.reserve(best.size());
  for (const auto& [item, score] : best) merged.push_back(*score);
  const size_t keep = std::min<size_t>(merged.size(), epoch.top_n);
  auto higher = [](const v1::ItemScore& a, const v1::ItemScore& b) {
    if (a.contribution() != b.contribution()) return a.contribution() > b.contribution();
    return a.item() < b.item();
  };
  std::partial_sort(merged.begin(), merged.begin() + keep, merged.end(), higher);
  merged.resize(keep);
  return merged;
}

std::vector<LossTracker::ClosedEpoch> LossTracker::CloseFinishedEpochs() {
  std::vector<ClosedEpoch> closed;
  while (!epochs_.empty()) {
    auto it = epochs_.begin();
    const uint32_t number = it->first;
    const uint32_t newest = epochs_.rbegin()->first;
    bool finished = true;
    for (uint32_t rank : live_ranks_) {
      auto reported = rank_epoch_.find(rank);
      if (reported == rank_epoch_.end()) {
        // A rank that never reported may be slow to its first report, or may
        // not measure at all (another pipeline stage): the epoch waits for
        // some rank to start the next one.
        if (newest <= number) finished = false;
        continue;
      }
      auto list = it->second.ranks.find(rank);
      const bool done = list != it->second.ranks.end() && list->second.complete;
      if (!done && reported->second <= number) finished = false;
    }
    if (!finished) break;
    closed.push_back(Close(number, it->second));
    last_closed_ = number;
    last_closed_iteration_ = it->second.iteration;
    epochs_.erase(it);
  }
  return closed;
}

LossTracker::ClosedEpoch LossTracker::Close(uint32_t number, const Epoch& epoch) {
  ClosedEpoch out;
  out.epoch = number;
  out.top_n = epoch.top_n;
  const std::vector<v1::ItemScore> merged = Merge(epoch);
  for (size_t i = 0; i < merged.size(); ++i) {
    ItemRecord& record = items_[merged[i].item()];
    const bool continues = record.epochs_in_top > 0 && last_closed_.has_value() &&
                           record.streak_epoch == *last_closed_ && *last_closed_ + 1 == number;
    record.epochs_in_top = continues ? record.epochs_in_top + 1 : 1;
    record.streak_epoch = number;
    record.last_score = merged[i];
    v1::EpochScore& entry = record.history[number];
    entry.set_epoch(number);
    entry.set_contribution(merged[i].contribution());
    entry.set_position(static_cast<uint32_t>(i + 1));
    while (record.history.size() > options_.max_history_epochs) {
      record.history.erase(record.history.begin());
    }
    ClosedItem item;
    item.score = merged[i];
    item.position = static_cast<uint32_t>(i + 1);
    item.epochs_in_top = record.epochs_in_top;
    out.items.push_back(std::move(item));
  }
  // Items that fell out of the top-N: their streak ends.
  for (auto& [item, record] : items_) {
    if (record.streak_epoch != number) record.epochs_in_top = 0;
  }
  TrimItems();
  return out;
}

void LossTracker::TrimItems() {
  if (items_.size() <= options_.max_items) return;
  // Never the items of the last closed top-N (their streaks feed the rule)
  // nor those listed in an open epoch (shown live, with their snapshots); of
  // the others, those whose last listing is oldest go first.
  std::set<uint64_t> listed;
  for (const auto& [number, epoch] : epochs_) {
    for (const auto& [rank, list] : epoch.ranks) {
      for (const v1::ItemScore& score : list.top) listed.insert(score.item());
    }
  }
  std::vector<std::tuple<uint32_t, uint64_t, uint64_t>> out_of_top;  // (last epoch, touched, item)
  for (const auto& [item, record] : items_) {
    if (record.epochs_in_top == 0 && listed.count(item) == 0)
      out_of_top.emplace_back(record.streak_epoch, record.touched, item);
  }
  const size_t excess = std::min(items_.size() - options_.max_items, out_of_top.size());
  std::nth_element(out_of_top.begin(), out_of_top.begin() + excess, out_of_top.end());
  for (size_t i = 0; i < excess; ++i) {
    auto it = items_.find(std::get<2>(out_of_top[i]));
    if (!it->second.snapshots.empty()) --items_with_snapshots_;
    items_.erase(it);
  }
}

void LossTracker::KeepSnapshot(v1::ItemSnapshot snapshot) {
  ItemRecord& record = items_[snapshot.item()];
  if (record.snapshots.empty()) ++items_with_snapshots_;
  record.touched = ++snapshot_clock_;
  record.snapshots.push_back(std::move(snapshot));
  while (record.snapshots.size() > options_.max_snapshots_per_item) record.snapshots.pop_front();
  // Over the item bound: the least recently updated item loses its snapshots.
  while (items_with_snapshots_ > options_.max_items_with_snapshots) {
    ItemRecord* oldest = nullptr;
    for (auto& [item, r] : items_) {
      if (!r.snapshots.empty() && (oldest == nullptr || r.touched < oldest->touched)) oldest = &r;
    }
    if (oldest == nullptr) break;
    oldest->snapshots.clear();
    --items_with_snapshots_;
  }
}

void LossTracker::KeepThumbnail(uint64_t item, v1::Thumbnail input) {
  KeptThumbnail& kept = thumbnails_[item];
  kept.input = std::move(input);
  kept.touched = ++snapshot_clock_;
  while (thumbnails_.size() > options_.max_thumbnails) {
    auto oldest = std::min_element(
        thumbnails_.begin(), thumbnails_.end(),
        [](const auto& a, const auto& b) { return a.second.touched < b.second.touched; });
    thumbnails_.erase(oldest);
  }
}

const LossTracker::ItemRecord* LossTracker::Find(uint64_t item) const {
  auto it = items_.find(item);
  return it == items_.end() ? nullptr : &it->second;
}

v1::LossState LossTracker::State() const {
  v1::LossState state;
  state.set_selection_layer(selection_layer_);
  for (const std::string& layer : monitored_layers_) state.add_monitored_layers(layer);
  if (last_closed_.has_value()) state.set_last_complete_epoch(*last_closed_);
  // The current epoch: the newest open one; between epochs, the last closed.
  std::vector<v1::ItemScore> merged;
  if (!epochs_.empty()) {
    const auto& [number, epoch] = *epochs_.rbegin();
    state.set_epoch(number);
    state.set_iteration(epoch.iteration);
    state.set_top_n(epoch.top_n);
    merged = Merge(epoch);
  } else if (last_closed_.has_value()) {
    state.set_epoch(*last_closed_);
    state.set_iteration(last_closed_iteration_);
    for (const auto& [item, record] : items_) {
      auto h = record.history.find(*last_closed_);
      if (h == record.history.end()) continue;
      merged.push_back(record.last_score);
      state.set_top_n(std::max<uint32_t>(state.top_n(), h->second.position()));
    }
    std::sort(merged.begin(), merged.end(), [](const v1::ItemScore& a, const v1::ItemScore& b) {
      return a.contribution() != b.contribution() ? a.contribution() > b.contribution()
                                                  : a.item() < b.item();
    });
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    const v1::ItemScore& score = merged[i];
    v1::DifficultItem* item = state.add_items();
    item->set_item(score.item());
    item->set_contribution(score.contribution());
    item->set_label(score.label());
    item->set_prediction(score.prediction());
    item->set_rank(score.rank());
    const ItemRecord* record = Find(score.item());
    if (record != nullptr) {
      item->set_epochs_in_top(record->epochs_in_top);
      for (const auto& [epoch, entry] : record->history) *item->add_history() = entry;
    }
    if (!epochs_.empty()) {  // the open epoch's live place
      v1::EpochScore* now = item->add_history();
      now->set_epoch(state.epoch());
      now->set_contribution(score.contribution());
      now->set_position(static_cast<uint32_t>(i + 1));
    }
    if (record != nullptr) {
      item->set_snapshots(static_cast<uint32_t>(record->snapshots.size()));
      if (!record->snapshots.empty()) {
        const v1::ItemSnapshot& latest = record->snapshots.back();
        if (latest.has_input()) *item->mutable_input() = latest.input();
        if (score.label() < 0) item->set_label(latest.label());
        if (score.prediction() < 0) item->set_prediction(latest.prediction());
      }
    }
    if (!item->has_input()) {
      if (auto kept = thumbnails_.find(score.item()); kept != thumbnails_.end()) {
        *item->mutable_input() = kept->second.input;
      }
    }
  }
  return state;
}

v1::LossAnswer LossTracker::Answer(const v1::LossQuery& query) const {
  v1::LossAnswer answer;
  *answer.mutable_state() = State();
  if (query.want_item()) {
    if (const ItemRecord* record = Find(query.item()); record != nullptr) {
      for (const v1::ItemSnapshot& snapshot : record->snapshots) *answer.add_snapshots() = snapshot;
    }
  }
  return answer;
}

}  // namespace trainscope::collector
