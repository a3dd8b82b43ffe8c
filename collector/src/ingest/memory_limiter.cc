#include "trainscope/collector/ingest/memory_limiter.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace trainscope::collector {

MemoryLimiter::MemoryLimiter(MemoryLimiterOptions options)
    : options_(std::move(options)),
      soft_(static_cast<uint64_t>(static_cast<double>(options_.limit_bytes) *
                                  (1.0 - options_.spike_fraction))) {}

uint64_t MemoryLimiter::ProcessRss() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (read != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::optional<std::string> MemoryLimiter::Refusal() {
  if (options_.limit_bytes == 0) return std::nullopt;
  const int64_t now = absl::GetCurrentTimeNanos();
  int64_t due = next_check_ns_.load(std::memory_order_relaxed);
  if (now >= due && next_check_ns_.compare_exchange_strong(
                        due, now + absl::ToInt64Nanoseconds(options_.check_interval))) {
    uint64_t rss = options_.rss ? options_.rss() : ProcessRss();
    if (rss > options_.limit_bytes) {
      // Over the hard limit: hand freed heap back before judging again (a job
      // that ended released its analysis; glibc keeps the pages otherwise).
      if (options_.trim) {
        options_.trim();
      } else {
        malloc_trim(0);
      }
      rss = options_.rss ? options_.rss() : ProcessRss();
    }
    rss_.store(rss, std::memory_order_relaxed);
    over_.store(rss > soft_, std::memory_order_relaxed);
  }
  if (!over_.load(std::memory_order_relaxed)) return std::nullopt;
  refused_.fetch_add(1, std::memory_order_relaxed);
  return absl::StrFormat(
      "the collector is over its memory limit (resident %.0f MiB, soft limit %.0f MiB of "
      "--memory-limit-mib=%.0f): batch refused; its events are counted as refused",
      static_cast<double>(rss_.load(std::memory_order_relaxed)) / (1 << 20),
      static_cast<double>(soft_) / (1 << 20),
      static_cast<double>(options_.limit_bytes) / (1 << 20));
}

}  // namespace trainscope::collector
