// A global cap on bytes of batches received but not yet durable.
//
// Usage:
//   IngestBudget budget(256 << 20);
//   budget.Acquire(bytes);  ... when durable: budget.Release(bytes);
//   if (budget.exhausted()) { /* hold the next read */ }
//
// Together with the per-stream bound on batches in flight, this keeps the
// collector's memory bounded by configuration: a stream over budget stops
// reading (gRPC flow control then pushes back on the agent).
//
// Threading: thread-safe (relaxed atomics: the cap is a soft bound).
#ifndef TRAINSCOPE_COLLECTOR_INGEST_INGEST_BUDGET_H_
#define TRAINSCOPE_COLLECTOR_INGEST_INGEST_BUDGET_H_

#include <atomic>
#include <cstdint>

namespace trainscope::collector {

class IngestBudget {
 public:
  explicit IngestBudget(uint64_t max_queued_bytes) : max_queued_bytes_(max_queued_bytes) {}

  void Acquire(uint64_t bytes) { queued_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void Release(uint64_t bytes) { queued_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }
  bool exhausted() const { return queued_bytes() >= max_queued_bytes_; }
  uint64_t queued_bytes() const { return queued_bytes_.load(std::memory_order_relaxed); }
  uint64_t max_queued_bytes() const { return max_queued_bytes_; }

 private:
  const uint64_t max_queued_bytes_;
  std::atomic<uint64_t> queued_bytes_{0};
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_INGEST_BUDGET_H_
