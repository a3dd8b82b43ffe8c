// The bounded queue between the GPU activity tracer and the sender: device
// events converted from CUPTI's buffers wait here until the sender encodes
// them into the next batch.
//
// Usage:
//   GpuEventQueue queue(65536);
//   tracer (any thread):  queue.Push(event);   // false: full, counted in dropped()
//   sender thread:        queue.Consume(max, [&](const GpuEventRecord& e) { encoder.AddGpu(e); });
//
// Bounded: the capacity is fixed at construction (rounded up to a power of
// two); a push into a full queue drops the newest event and counts it, as a
// full thread ring does.
//
// Threading: Push may be called from several threads (CUPTI completes buffers
// on its own thread and on whichever thread calls a flush): a mutex
// serialises producers. Consume is called by one consumer thread at a time.
// The counters may be read from any thread.
#ifndef TRAINSCOPE_AGENT_SRC_GPU_GPU_EVENT_QUEUE_H_
#define TRAINSCOPE_AGENT_SRC_GPU_GPU_EVENT_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "ring_registry.h"
#include "spsc_ring.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class GpuEventQueue {
 public:
  explicit GpuEventQueue(size_t capacity) : ring_(capacity) {}

  bool Push(const GpuEventRecord& event);

  template <typename Fn>
  size_t Consume(size_t max, Fn&& fn) {
    return ring_.Consume(max, std::forward<Fn>(fn));
  }

  size_t capacity() const { return ring_.capacity(); }
  uint64_t pushed() const { return ring_.pushed(); }
  uint64_t waiting() const { return ring_.size(); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return ring_.capacity() * sizeof(GpuEventRecord); }
  // Counts this queue in the rings' totals, as one more ring (agent_stats.h's
  // accounting holds over both).
  void AddTo(RingRegistry::Totals* totals) const {
    totals->recorded += pushed();
    totals->dropped_full += dropped();
    totals->waiting += waiting();
  }

 private:
  base::Mutex producer_mu_;
  SpscRing<GpuEventRecord> ring_;  // producer side under producer_mu_
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_GPU_EVENT_QUEUE_H_
