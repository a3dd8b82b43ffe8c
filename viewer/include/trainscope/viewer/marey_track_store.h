// The data behind the Marey graph: every device's CPU operators and GPU
// streams as MareyTracks, the steps (for the line charts, the pixel map and
// the step axis), the alerts by the device they blame, and the data's
// extent on the aligned and the raw clocks. It keeps memory bounded by
// evicting the oldest whole steps past `max_operators`. What is shown and
// how (rows, range, grouping, focus) is MareyModel's; the frame is
// MareyLayout's.
//
// Usage:
//   MareyTrackStore store(/*max_operators=*/20'000'000);
//   store.AddOperators(ops);        // any order; sorted when prepared
//   store.AddStep(step_record);
//   store.Prepare();                // before reading the tracks
//   store.ForEachTrack([](const MareyTrack& t) { ... });
//   if (store.layout_version() != seen) { /* tracks were added: new rows */ }
//
// Threading: not thread-safe; the model's owner (the UI thread) owns it.
// Prepared tracks may be read by several layout threads at once.
#ifndef TRAINSCOPE_VIEWER_MAREY_TRACK_STORE_H_
#define TRAINSCOPE_VIEWER_MAREY_TRACK_STORE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyTrackStore {
 public:
  // The steps kept for the charts; older ones are dropped.
  static constexpr size_t kMaxSteps = 100'000;
  using Tracks = std::map<uint32_t, std::unique_ptr<MareyTrack>>;
  // Per rank, its GPU streams by (device << 32 | stream).
  using Streams = std::map<uint32_t, std::map<uint64_t, std::unique_ptr<MareyTrack>>>;

  explicit MareyTrackStore(size_t max_operators) : max_operators_(max_operators) {}

  void SetDevices(const std::vector<DeviceInfo>& devices);
  void AddOperators(const std::vector<OperatorRecord>& operators);
  void AddStep(const StepRecord& step);
  // The glyph's device: an alert's cause, else its only device; a job-wide
  // alert (every device listed, no cause) blames none.
  void SetAlerts(const std::vector<Alert>& alerts);
  void Clear();
  // Sorts and indexes every track that changed.
  void Prepare();

  // Every track: devices' CPU tracks, then their streams'.
  template <typename Fn>
  void ForEachTrack(Fn fn) const {
    for (const auto& [rank, track] : devices_) fn(*track);
    for (const auto& [rank, lanes] : streams_) {
      for (const auto& [lane, track] : lanes) fn(*track);
    }
  }
  // The extent of `name`'s operators in `step` on `ranks` (sorted) on the
  // displayed clock; nullopt when there are none.
  std::optional<std::pair<int64_t, int64_t>> OperatorExtent(const std::vector<uint32_t>& ranks,
                                                            uint32_t name, uint64_t step,
                                                            bool raw) const;

  const Tracks& devices() const { return devices_; }
  const Streams& streams() const { return streams_; }
  const std::map<uint32_t, DeviceInfo>& device_info() const { return device_info_; }
  const DeviceInfo& info(uint32_t rank) const;
  const std::map<uint64_t, StepRecord>& steps() const { return steps_; }
  // Alerts by the device they blame.
  const std::map<uint32_t, std::vector<const Alert*>>& alerts_by_rank() const {
    return alerts_by_rank_;
  }
  // The data's extent on the displayed clock (low > high: no data).
  int64_t low(bool raw) const { return raw ? raw_min_ : aligned_min_; }
  int64_t high(bool raw) const { return raw ? raw_max_ : aligned_max_; }
  size_t operator_count() const { return operator_count_; }
  uint64_t evicted_operators() const { return evicted_; }
  // Changes whenever a track or a device appears or all are cleared: rows
  // and groups must be rebuilt.
  uint64_t layout_version() const { return layout_version_; }
  // Changes whenever operators are added or dropped: groups must be rebuilt.
  uint64_t data_version() const { return data_version_; }

 private:
  template <typename Fn>
  void ForEachMutableTrack(Fn fn) {
    for (auto& [rank, track] : devices_) fn(*track);
    for (auto& [rank, lanes] : streams_) {
      for (auto& [lane, track] : lanes) fn(*track);
    }
  }
  MareyTrack& DeviceTrack(uint32_t rank);
  MareyTrack& StreamTrack(uint32_t rank, uint32_t gpu_device, uint32_t gpu_stream);
  void EvictIfNeeded();
  void RecomputeExtent();

  size_t max_operators_;
  Tracks devices_;  // CPU operators
  Streams streams_;
  std::map<uint32_t, DeviceInfo> device_info_;
  std::map<uint64_t, StepRecord> steps_;
  std::map<uint32_t, std::vector<const Alert*>> alerts_by_rank_;
  std::vector<Alert> alerts_;
  std::map<uint64_t, size_t> operators_per_step_;
  size_t operator_count_ = 0;
  uint64_t evicted_ = 0;
  bool prepared_ = true;
  uint64_t layout_version_ = 0;
  uint64_t data_version_ = 0;
  // Data extent on each clock; recomputed after an eviction.
  int64_t aligned_min_ = INT64_MAX;
  int64_t aligned_max_ = INT64_MIN;
  int64_t raw_min_ = INT64_MAX;
  int64_t raw_max_ = INT64_MIN;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_TRACK_STORE_H_
