// Puts device events that CUPTI hands over out of order back in end order
// before they leave the agent, which the collector requires per stream.
//
// Why: with unforced flushes CUPTI returns an activity buffer only once all of
// its records are complete, so a buffer filled earlier can come back after a
// newer one. On an H100 (ResNet-50, batch 64) buffers came back up to ~100 ms
// (five steps) late; dropping what then ended before its stream's last sent
// event lost ~8 % of the kernels. Events are held until they end `hold_ns`
// before the newest end seen, then released in end order; a buffer later
// than that still loses its events (the converter counts them out_of_order).
//
// Usage:
//   DeviceEventReorder reorder(/*hold_ns=*/500'000'000, /*max_held=*/1 << 17);
//   reorder.Add(event);                           // any order
//   reorder.Release([&](const GpuEventRecord& e) { send(e); });   // each Finish
//   reorder.ReleaseEndedBefore(now_ns - hold_ns, send);          // on a timer
//   reorder.ReleaseAll(send);                     // at shutdown
//
// Bounded: past `max_held` events the earliest-ending go at once.
//
// Threading: not thread-safe; one owner (the converter, under the tracer's lock).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_DEVICE_EVENT_REORDER_H_
#define TRAINSCOPE_AGENT_SRC_GPU_DEVICE_EVENT_REORDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "trainscope/agent/event_record.h"

namespace trainscope::agent {

class DeviceEventReorder {
 public:
  using Sink = std::function<void(const GpuEventRecord&)>;

  DeviceEventReorder(int64_t hold_ns, size_t max_held);

  void Add(const GpuEventRecord& event);
  // Sends, earliest end first, every event that ends at least hold_ns before
  // the newest end added so far, and the earliest beyond max_held.
  void Release(const Sink& sink);
  // Sends, earliest end first, every event that ended before `agent_ns` (the
  // tail of work after which the device went quiet: no newer event comes to
  // push it out).
  void ReleaseEndedBefore(int64_t agent_ns, const Sink& sink);
  // Sends every held event, earliest end first.
  void ReleaseAll(const Sink& sink);

  size_t held() const { return heap_.size(); }

 private:
  void PopTo(const Sink& sink);

  const int64_t hold_ns_;
  const size_t max_held_;
  int64_t newest_end_ns_ = std::numeric_limits<int64_t>::min();
  std::vector<GpuEventRecord> heap_;  // a min-heap on event.end_ns
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_DEVICE_EVENT_REORDER_H_
