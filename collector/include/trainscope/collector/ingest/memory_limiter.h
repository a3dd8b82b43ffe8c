// The collector's process-wide memory limiter, after the OpenTelemetry
// Collector's memory_limiter: with a limit set (--memory-limit-mib), batches
// are refused while the process' resident memory is over the soft limit
// (limit minus a spike allowance, 20 % by default), and over the hard limit
// freed heap is also handed back to the system (malloc_trim) before the next
// check. A refused batch is rejected to its agent like an invalid one (its
// sequence consumed, its events counted as refused by the agent, the rank's
// batches_refused in `trainscope status` and Prometheus), so the accounting
// stays exact: sent = stored + counted drops + refused.
//
// Usage:
//   MemoryLimiter limiter({.limit_bytes = 512ull << 20});
//   if (std::optional<std::string> why = limiter.Refusal()) refuse the batch with *why;
//
// Threading: thread-safe; Refusal() reads RSS at most once per check_interval
// (the others use the last reading), so it is cheap on the ingest path.
#ifndef TRAINSCOPE_COLLECTOR_INGEST_MEMORY_LIMITER_H_
#define TRAINSCOPE_COLLECTOR_INGEST_MEMORY_LIMITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace trainscope::collector {

struct MemoryLimiterOptions {
  uint64_t limit_bytes = 0;     // hard limit; 0: no limit
  double spike_fraction = 0.2;  // soft limit = limit x (1 - spike_fraction)
  absl::Duration check_interval = absl::Milliseconds(100);
  std::function<uint64_t()> rss;  // null: the process' RSS from /proc/self/statm
  std::function<void()> trim;     // null: malloc_trim(0)
};

class MemoryLimiter {
 public:
  explicit MemoryLimiter(MemoryLimiterOptions options);

  // Why a batch must be refused now (names the limit and the RSS), or nullopt.
  std::optional<std::string> Refusal();

  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t last_rss() const { return rss_.load(std::memory_order_relaxed); }
  uint64_t soft_limit() const { return soft_; }
  uint64_t limit() const { return options_.limit_bytes; }

  // The resident set of this process in bytes (0 when unreadable).
  static uint64_t ProcessRss();

 private:
  const MemoryLimiterOptions options_;
  const uint64_t soft_;
  std::atomic<int64_t> next_check_ns_{0};
  std::atomic<uint64_t> rss_{0};
  std::atomic<bool> over_{false};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_MEMORY_LIMITER_H_
