// One recording thread's ring for one Agent, with the counters the producer
// owns.
//
// Usage: made by RingRegistry::CreateRing on a thread's first record; the
// Agent's hot path calls Push; the Sender drains `ring()` and sums counters.
//
// Threading: Push, the sampling counter and the drop counters are written only
// by the owning (producer) thread; they are relaxed atomics so the sender may
// read them at any time. MarkProducerExited is called once by the owning
// thread at exit; MarkAgentGone once by the registry when the Agent goes away.
#ifndef TRAINSCOPE_AGENT_SRC_THREAD_RING_H_
#define TRAINSCOPE_AGENT_SRC_THREAD_RING_H_

#include <atomic>
#include <cstdint>

#include "spsc_ring.h"
#include "trainscope/agent/event_record.h"

namespace trainscope::agent {

class ThreadRing {
 public:
  ThreadRing(uint64_t agent_serial, uint32_t os_thread_id, size_t capacity)
      : ring_(capacity), agent_serial_(agent_serial), os_thread_id_(os_thread_id) {}

  // Producer only: pushes, or counts a ring_full drop.
  void Push(const EventRecord& record) {
    if (!ring_.TryPush(record)) Increment(dropped_full_);
  }
  // Producer only: true when this operator event is to be skipped (counted).
  bool SampleOut(uint32_t period) {
    if (++sample_counter_ < period) {
      Increment(sampled_out_);
      return true;
    }
    sample_counter_ = 0;
    return false;
  }

  SpscRing<EventRecord>& ring() { return ring_; }
  const SpscRing<EventRecord>& ring() const { return ring_; }
  uint64_t agent_serial() const { return agent_serial_; }
  uint32_t os_thread_id() const { return os_thread_id_; }
  uint64_t dropped_full() const { return dropped_full_.load(std::memory_order_relaxed); }
  uint64_t sampled_out() const { return sampled_out_.load(std::memory_order_relaxed); }
  uint64_t recorded() const { return ring_.pushed(); }

  void MarkProducerExited() { producer_exited_.store(true, std::memory_order_release); }
  bool producer_exited() const { return producer_exited_.load(std::memory_order_acquire); }
  void MarkAgentGone() { agent_gone_.store(true, std::memory_order_release); }
  bool agent_gone() const { return agent_gone_.load(std::memory_order_acquire); }

 private:
  // Single writer: a plain load + store, no locked read-modify-write.
  static void Increment(std::atomic<uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  SpscRing<EventRecord> ring_;
  alignas(64) std::atomic<uint64_t> dropped_full_{0};
  std::atomic<uint64_t> sampled_out_{0};
  uint32_t sample_counter_ = 0;
  const uint64_t agent_serial_;
  const uint32_t os_thread_id_;
  std::atomic<bool> producer_exited_{false};
  std::atomic<bool> agent_gone_{false};
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_THREAD_RING_H_
