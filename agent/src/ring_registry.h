// The set of thread rings of one Agent, and the memory they may use.
//
// Usage:
//   RingRegistry rings(serial, /*ring_capacity=*/16384, /*budget_bytes=*/32 << 20);
//   producer's first record:  std::shared_ptr<ThreadRing> r = rings.CreateRing(tid);
//   sender:  for (auto& r : rings.Snapshot()) drain(r); rings.RetireExitedAndEmpty();
//   anyone:  rings.Sum();
//
// A new ring gets the configured capacity, or the largest power of two that
// still fits the budget, or none (capacity 0: its records count as ring_full).
// Retired rings (thread gone, ring drained) give their bytes back and leave
// their counters in the totals.
//
// Threading: thread-safe; a mutex guards the list (only cold paths take it).
#ifndef TRAINSCOPE_AGENT_SRC_RING_REGISTRY_H_
#define TRAINSCOPE_AGENT_SRC_RING_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "thread_ring.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class RingRegistry {
 public:
  // Records below this many per ring are not worth a ring.
  static constexpr size_t kMinRingCapacity = 64;

  RingRegistry(uint64_t agent_serial, size_t ring_capacity, uint64_t budget_bytes);
  // Marks every ring agent-gone so threads that still hold one let it go.
  ~RingRegistry();

  std::shared_ptr<ThreadRing> CreateRing(uint32_t os_thread_id);
  std::vector<std::shared_ptr<ThreadRing>> Snapshot() const;
  // Forgets rings whose producer exited and which are empty.
  void RetireExitedAndEmpty();

  struct Totals {
    uint64_t recorded = 0;      // pushed into rings
    uint64_t dropped_full = 0;  // ring_full drops
    uint64_t sampled_out = 0;
    uint64_t waiting = 0;  // still in rings
  };
  Totals Sum() const;
  uint64_t bytes_in_use() const;

 private:
  const uint64_t agent_serial_;
  const size_t ring_capacity_;
  const uint64_t budget_bytes_;
  mutable base::Mutex mu_;
  std::vector<std::shared_ptr<ThreadRing>> rings_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  Totals retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_RING_REGISTRY_H_
