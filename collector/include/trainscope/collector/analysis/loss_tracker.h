// Merges the ranks' loss-contribution reports (loss.proto) into the job-wide
// top-N of each epoch, keeps each listed item's history per epoch, and keeps
// the recent contribution/reduction-map snapshots of selected items.
//
// Each rank sends the top-N of its own share of the data set, so the job-wide
// top-N of an epoch is the top-N of the union of the ranks' latest lists
// (an item listed twice keeps its highest score). An epoch closes when every
// rank that reported has sent its final list for it (or has gone on to a later
// epoch, or its stream closed); a closed epoch yields, per item of its final
// top-N, the number of consecutive closed epochs the item has been in it,
// which the difficult_item rule judges.
//
// Usage (inside JobAnalyzer):
//   LossTracker tracker;
//   LossTracker::Changes changes = tracker.OnReport(rank, report);
//   if (changes.state_changed) publish(tracker.State());
//   for (const LossTracker::ClosedEpoch& e : changes.closed) judge(e);
//   v1::LossAnswer answer = tracker.Answer(query);
//
// Memory: bounded by options: item records (those out of the top-N the
// longest evicted first), snapshots per item, items with snapshots and items
// with a listing's thumbnail (least recently updated evicted first), and
// epochs of history per item.
//
// Threading: not thread-safe; one thread owns it (JobAnalyzer's owner).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_LOSS_TRACKER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_LOSS_TRACKER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainscope/v1/loss.pb.h"

namespace trainscope::collector {

struct LossTrackerOptions {
  uint32_t max_snapshots_per_item = 64;
  uint32_t max_items_with_snapshots = 1024;
  uint32_t max_thumbnails = 4096;      // inputs sent with listings (ItemScore.input), ~3 KiB each
  uint32_t max_history_epochs = 1000;  // per item; the oldest go first
  // Items with a record (ever in a closed epoch's top-N, or with snapshots);
  // past it, those out of the top-N the longest go first (never one in the
  // last closed top-N or listed in an open epoch).
  uint32_t max_items = 65536;
};

class LossTracker {
 public:
  // One item of a closed epoch's final job-wide top-N.
  struct ClosedItem {
    v1::ItemScore score;         // with the rank that measured it
    uint32_t position = 0;       // 1-based
    uint32_t epochs_in_top = 0;  // consecutive closed epochs, this one included
  };
  struct ClosedEpoch {
    uint32_t epoch = 0;
    uint32_t top_n = 0;
    std::vector<ClosedItem> items;  // highest first
  };
  struct Changes {
    bool state_changed = false;               // State() differs from before
    std::vector<v1::ItemSnapshot> snapshots;  // arrived with the report, rank set
    std::vector<ClosedEpoch> closed;          // epochs this report closed, oldest first
  };

  explicit LossTracker(LossTrackerOptions options = {});

  Changes OnReport(uint32_t rank, const v1::LossReport& report);
  // The rank's stream opened: epochs wait for its final lists (or, while it
  // has not reported, for the next epoch to start).
  void OnRankJoined(uint32_t rank);
  // The rank's stream closed: epochs no longer wait for its final lists.
  Changes OnRankGone(uint32_t rank);

  // The current epoch's merged top-N with each item's history.
  v1::LossState State() const;
  v1::LossAnswer Answer(const v1::LossQuery& query) const;
  bool has_data() const { return !epochs_.empty() || last_closed_.has_value(); }

 private:
  struct RankList {
    std::vector<v1::ItemScore> top;
    uint64_t iteration = 0;
    bool complete = false;
  };
  struct Epoch {
    std::map<uint32_t, RankList> ranks;
    uint32_t top_n = 0;
    uint64_t iteration = 0;
  };
  struct ItemRecord {
    std::map<uint32_t, v1::EpochScore> history;  // closed epochs
    v1::ItemScore last_score;                    // as merged in the last closed epoch it was in
    std::deque<v1::ItemSnapshot> snapshots;
    uint32_t epochs_in_top = 0;  // as of the last closed epoch
    uint32_t streak_epoch = 0;   // the closed epoch epochs_in_top counts up to
    uint64_t touched = 0;        // snapshot arrival order, for eviction
  };
  struct KeptThumbnail {
    v1::Thumbnail input;
    uint64_t touched = 0;  // arrival order, for eviction
  };

  // The union's top-N of one epoch, highest first (ties: lower item first).
  static std::vector<v1::ItemScore> Merge(const Epoch& epoch);
  std::vector<ClosedEpoch> CloseFinishedEpochs();
  ClosedEpoch Close(uint32_t epoch_number, const Epoch& epoch);
  void KeepSnapshot(v1::ItemSnapshot snapshot);
  void KeepThumbnail(uint64_t item, v1::Thumbnail input);
  void TrimItems();
  const ItemRecord* Find(uint64_t item) const;

  const LossTrackerOptions options_;
  std::map<uint32_t, Epoch> epochs_;         // open epochs
  std::set<uint32_t> live_ranks_;            // connected ranks: epochs wait for them
  std::map<uint32_t, uint32_t> rank_epoch_;  // highest epoch each rank reported
  std::optional<uint32_t> last_closed_;
  uint64_t last_closed_iteration_ = 0;
  std::map<uint64_t, ItemRecord> items_;
  std::string selection_layer_;
  std::vector<std::string> monitored_layers_;
  std::map<uint64_t, KeptThumbnail> thumbnails_;  // from listings, for items without snapshots
  uint64_t snapshot_clock_ = 0;
  uint32_t items_with_snapshots_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_LOSS_TRACKER_H_
