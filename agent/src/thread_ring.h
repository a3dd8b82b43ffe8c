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
#include <cstddef>
#include <cstdint>

#include "spsc_ring.h"
#include "trainscope/agent/event_record.h"
#include "trainscope_agent.h"

namespace trainscope::agent {

// The raw producer protocol (trainscope_agent.h) writes these words through
// plain pointers and __atomic builtins: the layouts must be what it assumes.
static_assert(sizeof(trainscope_raw_record) == sizeof(EventRecord));
static_assert(offsetof(trainscope_raw_record, start) == offsetof(EventRecord, start_ns));
static_assert(offsetof(trainscope_raw_record, end) == offsetof(EventRecord, end_ns));
static_assert(offsetof(trainscope_raw_record, value) == offsetof(EventRecord, value));
static_assert(offsetof(trainscope_raw_record, name) == offsetof(EventRecord, name));
static_assert(offsetof(trainscope_raw_record, kind) == offsetof(EventRecord, kind));
static_assert(offsetof(trainscope_raw_record, detail) == offsetof(EventRecord, detail));
static_assert(TRAINSCOPE_RAW_OPERATOR_KIND == static_cast<unsigned>(EventKind::kOperatorTicks));
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) &&
              std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<bool>) == sizeof(uint8_t) &&
              std::atomic<bool>::is_always_lock_free);

class ThreadRing {
 public:
  ThreadRing(uint64_t agent_serial, uint32_t os_thread_id, size_t capacity)
      : ring_(capacity), agent_serial_(agent_serial), os_thread_id_(os_thread_id) {
    const SpscRing<EventRecord>::ProducerWords words = ring_.producer_words();
    raw_.head = reinterpret_cast<uint64_t*>(words.head);
    raw_.tail = reinterpret_cast<const uint64_t*>(words.tail);
    raw_.cached_tail = words.cached_tail;
    raw_.slots = reinterpret_cast<trainscope_raw_record*>(words.slots);
    raw_.mask = words.mask;
    raw_.capacity = words.capacity;
    raw_.dropped_full = reinterpret_cast<uint64_t*>(&dropped_full_);
    raw_.recording = reinterpret_cast<const uint8_t*>(&kNeverRecording);
    raw_.sampling_period = reinterpret_cast<const uint32_t*>(&kNoSampling);
  }

  // The producer's words for raw pushes; `recording` and `sampling_period`
  // are the agent's switches (they outlive the ring's use by the producer:
  // a hook drops its ring when its session goes). Set by the producer thread
  // before it hands raw() out.
  void BindSwitches(const std::atomic<bool>* recording,
                    const std::atomic<uint32_t>* sampling_period) {
    raw_.recording = reinterpret_cast<const uint8_t*>(recording);
    raw_.sampling_period = reinterpret_cast<const uint32_t*>(sampling_period);
  }
  const trainscope_raw_ring* raw() const { return &raw_; }

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

  // Consumer only: the latest end a raw operator of this ring was mapped to
  // (the sender keeps a thread's operator ends monotonic across fits).
  int64_t last_mapped_end_ns() const { return last_mapped_end_ns_; }
  void set_last_mapped_end_ns(int64_t end_ns) { last_mapped_end_ns_ = end_ns; }

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

  static constexpr std::atomic<bool> kNeverRecording{false};
  static constexpr std::atomic<uint32_t> kNoSampling{1};

  SpscRing<EventRecord> ring_;
  trainscope_raw_ring raw_;
  alignas(64) std::atomic<uint64_t> dropped_full_{0};
  std::atomic<uint64_t> sampled_out_{0};
  uint32_t sample_counter_ = 0;
  const uint64_t agent_serial_;
  const uint32_t os_thread_id_;
  int64_t last_mapped_end_ns_ = INT64_MIN;  // consumer's
  std::atomic<bool> producer_exited_{false};
  std::atomic<bool> agent_gone_{false};
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_THREAD_RING_H_
