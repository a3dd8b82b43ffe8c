// A bounded single-producer single-consumer ring of trivially copyable T.
//
// Usage:
//   SpscRing<EventRecord> ring(1024);          // capacity rounded up to 2^k
//   producer thread: if (!ring.TryPush(r)) count_drop();
//   consumer thread: ring.Consume(max, [](const EventRecord& r) { ... });
//
// Threading: exactly one producer thread calls TryPush, exactly one consumer
// thread (at a time) calls Consume; size() may be read from any thread.
// Positions are 64-bit counters that never wrap in practice, so head() is the
// number of records ever pushed. Head and tail live on separate cache lines
// and each side caches the other's position, so a push touches the shared
// tail line only when the ring looks full (the Rigtorp/Tracy scheme).
// Capacity 0 is allowed: every push fails (a thread denied a ring by the
// memory budget still counts its drops through the same path).
#ifndef TRAINSCOPE_AGENT_SRC_SPSC_RING_H_
#define TRAINSCOPE_AGENT_SRC_SPSC_RING_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace trainscope::agent {

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  static constexpr size_t kCacheLine = 64;

  explicit SpscRing(size_t capacity)
      : capacity_(capacity == 0 ? 0 : std::bit_ceil(capacity)),
        mask_(capacity_ == 0 ? 0 : capacity_ - 1),
        slots_(capacity_ == 0 ? nullptr : new T[capacity_]) {}

  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return capacity_; }

  // Producer only. False when full (nothing written).
  bool TryPush(const T& value) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - producer_cached_tail_ >= capacity_) {
      producer_cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - producer_cached_tail_ >= capacity_) return false;
    }
    slots_[head & mask_] = value;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // The producer's words, for a producer compiled apart that pushes with the
  // same protocol as TryPush (trainscope_raw_ring_push_operator): stable for
  // the ring's life.
  struct ProducerWords {
    std::atomic<uint64_t>* head;
    const std::atomic<uint64_t>* tail;
    uint64_t* cached_tail;
    T* slots;
    uint64_t mask;
    uint64_t capacity;
  };
  ProducerWords producer_words() {
    return {&head_, &tail_, &producer_cached_tail_, slots_.get(), mask_, capacity_};
  }

  // Consumer only. Calls fn(const T&) for up to `max` records in push order,
  // then frees their slots. Returns how many it consumed.
  template <typename Fn>
  size_t Consume(size_t max, Fn&& fn) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    uint64_t head = consumer_cached_head_;
    if (head - tail < max) head = consumer_cached_head_ = head_.load(std::memory_order_acquire);
    uint64_t available = head - tail;
    const size_t n = available < max ? static_cast<size_t>(available) : max;
    for (size_t i = 0; i < n; ++i) fn(slots_[(tail + i) & mask_]);
    if (n > 0) tail_.store(tail + n, std::memory_order_release);
    return n;
  }

  // Records ever pushed / consumed; any thread (a consistent pair is not
  // guaranteed while both sides run).
  uint64_t pushed() const { return head_.load(std::memory_order_acquire); }
  uint64_t consumed() const { return tail_.load(std::memory_order_acquire); }
  // Records waiting; any thread.
  uint64_t size() const {
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t head = head_.load(std::memory_order_acquire);
    return head - tail;
  }

 private:
  // Producer's line.
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
  uint64_t producer_cached_tail_ = 0;
  // Consumer's line.
  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
  uint64_t consumer_cached_head_ = 0;
  // Read-only after construction.
  alignas(kCacheLine) const size_t capacity_;
  const size_t mask_;
  const std::unique_ptr<T[]> slots_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_SPSC_RING_H_
