#include "trainscope/viewer/marey_track_store.h"

#include <algorithm>
#include <numeric>

namespace trainscope::viewer {

MareyTrack& MareyTrackStore::DeviceTrack(uint32_t rank) {
  std::unique_ptr<MareyTrack>& track = devices_[rank];
  if (track == nullptr) {
    track = std::make_unique<MareyTrack>();
    track->rank = rank;
    if (!device_info_.count(rank)) device_info_[rank] = DeviceInfo{rank, 0, ""};
    ++layout_version_;
  }
  return *track;
}

MareyTrack& MareyTrackStore::StreamTrack(uint32_t rank, uint32_t gpu_device, uint32_t gpu_stream) {
  DeviceTrack(rank);  // a device's rows start with its CPU row
  std::unique_ptr<MareyTrack>& track =
      streams_[rank][(static_cast<uint64_t>(gpu_device) << 32) | gpu_stream];
  if (track == nullptr) {
    track = std::make_unique<MareyTrack>();
    track->rank = rank;
    track->gpu = true;
    track->gpu_device = gpu_device;
    track->gpu_stream = gpu_stream;
    ++layout_version_;
  }
  return *track;
}

const DeviceInfo& MareyTrackStore::info(uint32_t rank) const {
  static const DeviceInfo kUnknown;
  auto it = device_info_.find(rank);
  return it == device_info_.end() ? kUnknown : it->second;
}

void MareyTrackStore::SetDevices(const std::vector<DeviceInfo>& devices) {
  for (const DeviceInfo& device : devices) {
    device_info_[device.rank] = device;
    DeviceTrack(device.rank);
  }
  ++layout_version_;  // stages and hosts may have changed
}

void MareyTrackStore::AddOperators(const std::vector<OperatorRecord>& operators) {
  if (operators.empty()) return;
  // Number repeated operators in time order on each device, whatever order
  // the batch came in.
  std::vector<uint32_t> order(operators.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const OperatorRecord& x = operators[a];
    const OperatorRecord& y = operators[b];
    return x.rank != y.rank ? x.rank < y.rank : x.start_ns < y.start_ns;
  });
  MareyTrack* cpu = nullptr;
  MareyTrack* stream = nullptr;  // the last GPU stream's: runs of one stream are common
  for (uint32_t index : order) {
    const OperatorRecord& record = operators[index];
    MareyTrack* track = nullptr;
    if (IsGpu(record.op_class)) {
      if (stream == nullptr || stream->rank != record.rank ||
          stream->gpu_device != record.gpu_device || stream->gpu_stream != record.gpu_stream) {
        stream = &StreamTrack(record.rank, record.gpu_device, record.gpu_stream);
      }
      track = stream;
    } else {
      if (cpu == nullptr || cpu->rank != record.rank) cpu = &DeviceTrack(record.rank);
      track = cpu;
    }
    const MareyTrack::Op op = track->Add(record);
    ++operators_per_step_[record.step];
    ++operator_count_;
    aligned_min_ = std::min(aligned_min_, record.start_ns);
    aligned_max_ = std::max(aligned_max_, op.end);
    raw_min_ = std::min(raw_min_, record.raw_start_ns);
    raw_max_ = std::max(raw_max_, record.raw_start_ns + (op.end - op.start));
  }
  prepared_ = false;
  ++data_version_;
  EvictIfNeeded();
}

void MareyTrackStore::EvictIfNeeded() {
  if (operator_count_ <= max_operators_) return;
  // Drop whole steps, oldest first, down to 90 % of the cap.
  const size_t target = max_operators_ / 10 * 9;
  uint64_t cutoff = 0;
  size_t remaining = operator_count_;
  for (auto it = operators_per_step_.begin();
       it != operators_per_step_.end() && remaining > target;) {
    remaining -= it->second;
    evicted_ += it->second;
    cutoff = it->first + 1;
    it = operators_per_step_.erase(it);
  }
  auto old = [cutoff](const MareyTrack::Op& op) { return op.step < cutoff; };
  ForEachMutableTrack([&](MareyTrack& track) {
    std::erase_if(track.compute, old);
    std::erase_if(track.comm, old);
    track.Invalidate();
  });
  operator_count_ = remaining;
  RecomputeExtent();
}

void MareyTrackStore::RecomputeExtent() {
  aligned_min_ = raw_min_ = INT64_MAX;
  aligned_max_ = raw_max_ = INT64_MIN;
  ForEachTrack([&](const MareyTrack& track) {
    for (const auto* ops : {&track.compute, &track.comm}) {
      for (const MareyTrack::Op& op : *ops) {
        aligned_min_ = std::min(aligned_min_, op.start);
        aligned_max_ = std::max(aligned_max_, op.end);
        const int64_t raw = op.start + track.raw_base + op.raw_delta;
        raw_min_ = std::min(raw_min_, raw);
        raw_max_ = std::max(raw_max_, raw + op.end - op.start);
      }
    }
  });
}

void MareyTrackStore::AddStep(const StepRecord& step) {
  steps_[step.step] = step;
  while (steps_.size() > kMaxSteps) steps_.erase(steps_.begin());
}

void MareyTrackStore::SetAlerts(const std::vector<Alert>& alerts) {
  alerts_ = alerts;
  alerts_by_rank_.clear();
  for (const Alert& alert : alerts_) {
    // The glyph marks the blamed device (victims are named in the text); an
    // alert about one device without a cause marks it; a job-wide one (the
    // job's step-time regression lists every device) marks none: a cross on
    // every axis would blame them all.
    if (alert.cause >= 0) {
      alerts_by_rank_[static_cast<uint32_t>(alert.cause)].push_back(&alert);
    } else if (alert.ranks.size() == 1) {
      alerts_by_rank_[alert.ranks[0]].push_back(&alert);
    }
  }
}

void MareyTrackStore::Clear() {
  devices_.clear();
  streams_.clear();
  device_info_.clear();
  steps_.clear();
  operators_per_step_.clear();
  operator_count_ = 0;
  evicted_ = 0;
  RecomputeExtent();
  ++layout_version_;
  ++data_version_;
}

void MareyTrackStore::Prepare() {
  if (prepared_) return;
  ForEachMutableTrack([](MareyTrack& track) { track.Prepare(); });
  prepared_ = true;
}

std::optional<std::pair<int64_t, int64_t>> MareyTrackStore::OperatorExtent(
    const std::vector<uint32_t>& ranks, uint32_t name, uint64_t step, bool raw) const {
  int64_t low = INT64_MAX, high = INT64_MIN;
  ForEachTrack([&](const MareyTrack& track) {
    if (!std::binary_search(ranks.begin(), ranks.end(), track.rank)) return;
    for (const auto* ops : {&track.compute, &track.comm}) {
      for (const MareyTrack::Op& op : *ops) {
        if (op.name != name || op.step != step) continue;
        low = std::min(low, track.StartOf(op, raw));
        high = std::max(high, track.EndOf(op, raw));
      }
    }
  });
  if (low == INT64_MAX) return std::nullopt;
  return std::make_pair(low, high);
}

}  // namespace trainscope::viewer
