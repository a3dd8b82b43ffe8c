#include "trainscope/viewer/marey_group.h"

#include <algorithm>
#include <unordered_map>

namespace trainscope::viewer {

std::map<std::string, std::unique_ptr<MareyGroup>> MareyGroup::Build(
    By by, const std::map<uint32_t, std::unique_ptr<MareyTrack>>& devices,
    const std::map<uint32_t, DeviceInfo>& info) {
  std::map<std::string, std::unique_ptr<MareyGroup>> groups;
  for (const auto& [rank, track] : devices) {
    auto found = info.find(rank);
    const DeviceInfo device = found != info.end() ? found->second : DeviceInfo{rank, 0, ""};
    const std::string key = by == By::kStage
                                ? "stage " + std::to_string(device.stage)
                                : "host " + (device.host.empty() ? std::string("?") : device.host);
    std::unique_ptr<MareyGroup>& group = groups[key];
    if (group == nullptr) {
      group = std::make_unique<MareyGroup>();
      group->key = key;
    }
    group->ranks.push_back(rank);
  }
  struct Aggregate {
    int64_t min_start = INT64_MAX, max_start = INT64_MIN, min_end = INT64_MAX, max_end = INT64_MIN;
    double sum_start = 0, sum_end = 0, sum_raw = 0;
    uint32_t count = 0;
    MareyTrack::Op first;
  };
  for (auto& [key, group] : groups) {
    std::unordered_map<uint64_t, Aggregate> aggregates;
    std::vector<uint64_t> order;  // first-seen order keeps the output nearly sorted
    double raw_base_sum = 0;
    for (uint32_t rank : group->ranks) {
      const MareyTrack& track = *devices.at(rank);
      raw_base_sum += static_cast<double>(track.raw_base);
      for (const auto* ops : {&track.compute, &track.comm}) {
        for (const MareyTrack::Op& op : *ops) {
          // Sends and receives share a key to join across devices; keep
          // them apart inside a group.
          const uint64_t key = MareyTrack::MixKey(op.key, static_cast<uint64_t>(op.cls));
          auto [it, inserted] = aggregates.try_emplace(key);
          Aggregate& a = it->second;
          if (inserted) {
            a.first = op;
            order.push_back(key);
          }
          a.min_start = std::min(a.min_start, op.start);
          a.max_start = std::max(a.max_start, op.start);
          a.min_end = std::min(a.min_end, op.end);
          a.max_end = std::max(a.max_end, op.end);
          a.sum_start += static_cast<double>(op.start);
          a.sum_end += static_cast<double>(op.end);
          a.sum_raw += static_cast<double>(op.raw_delta);
          ++a.count;
        }
      }
    }
    const int64_t raw_base =
        static_cast<int64_t>(raw_base_sum / std::max<size_t>(1, group->ranks.size()));
    for (MareyTrack* track : {&group->min, &group->avg, &group->max}) {
      track->raw_base = raw_base;
      track->rank = group->ranks.empty() ? 0 : group->ranks.front();
    }
    for (uint64_t key : order) {
      const Aggregate& a = aggregates[key];
      MareyTrack::Op op = a.first;
      op.raw_delta = static_cast<int32_t>(a.sum_raw / a.count);
      op.start = a.min_start;
      op.end = a.min_end;
      group->min.Push(op);
      op.start = static_cast<int64_t>(a.sum_start / a.count);
      op.end = static_cast<int64_t>(a.sum_end / a.count);
      group->avg.Push(op);
      op.start = a.max_start;
      op.end = a.max_end;
      group->max.Push(op);
    }
    group->min.Prepare();
    group->avg.Prepare();
    group->max.Prepare();
  }
  return groups;
}

}  // namespace trainscope::viewer
