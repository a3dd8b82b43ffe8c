#include "gpu/device_event_reorder.h"

#include <algorithm>

namespace trainscope::agent {
namespace {

// std::push_heap builds a max-heap: "less" here means "ends later".
bool EndsLater(const GpuEventRecord& a, const GpuEventRecord& b) {
  return a.event.end_ns > b.event.end_ns;
}

}  // namespace

DeviceEventReorder::DeviceEventReorder(int64_t hold_ns, size_t max_held)
    : hold_ns_(hold_ns), max_held_(max_held) {}

void DeviceEventReorder::Add(const GpuEventRecord& event) {
  newest_end_ns_ = std::max(newest_end_ns_, event.event.end_ns);
  heap_.push_back(event);
  std::push_heap(heap_.begin(), heap_.end(), EndsLater);
}

void DeviceEventReorder::PopTo(const Sink& sink) {
  std::pop_heap(heap_.begin(), heap_.end(), EndsLater);
  const GpuEventRecord event = heap_.back();
  heap_.pop_back();
  sink(event);
}

void DeviceEventReorder::Release(const Sink& sink) {
  while (heap_.size() > max_held_) PopTo(sink);
  while (!heap_.empty() && heap_.front().event.end_ns <= newest_end_ns_ - hold_ns_) PopTo(sink);
}

void DeviceEventReorder::ReleaseEndedBefore(int64_t agent_ns, const Sink& sink) {
  while (!heap_.empty() && heap_.front().event.end_ns < agent_ns) PopTo(sink);
}

void DeviceEventReorder::ReleaseAll(const Sink& sink) {
  while (!heap_.empty()) PopTo(sink);
}

}  // namespace trainscope::agent
