#include "clock.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace trainscope::pytorch {
namespace {

bool CpuFlag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  std::string word;
  while (words >> word) {
    if (word == flag) return true;
  }
  return false;
}

// Invariant TSC and the kernel itself trusting it for CLOCK_MONOTONIC.
bool TscIsInvariant() {
  std::ifstream clocksource("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(clocksource >> source) || source != "tsc") return false;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return CpuFlag(line, "constant_tsc") && CpuFlag(line, "nonstop_tsc");
    }
  }
  return false;
}

}  // namespace

TickClock::TickClock(Source source) {
  use_tsc_ = source == Source::kAuto && TscIsInvariant();
  if (!use_tsc_) return;
  origin_ = Sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const Pair now = Sample();
  if (now.ticks <= origin_.ticks || now.ns <= origin_.ns) {
    use_tsc_ = false;  // a TSC that does not advance is no clock
    return;
  }
  const double ns_per_tick =
      static_cast<double>(now.ns - origin_.ns) / static_cast<double>(now.ticks - origin_.ticks);
  Publish(now.ticks, now.ns, static_cast<uint64_t>(ns_per_tick * (1ull << kShift)));
}

TickClock::Pair TickClock::Sample() {
  Pair best{};
  uint64_t best_width = ~0ull;
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = __rdtsc();
    const int64_t ns = agent::Agent::Now();
    const uint64_t after = __rdtsc();
    if (after - before < best_width) {
      best_width = after - before;
      best = Pair{before + (after - before) / 2, ns};
    }
  }
  return best;
}

void TickClock::Recalibrate() {
  if (!use_tsc_) return;
  const Pair now = Sample();
  if (now.ticks <= origin_.ticks || now.ns <= origin_.ns) return;
  const double ns_per_tick =
      static_cast<double>(now.ns - origin_.ns) / static_cast<double>(now.ticks - origin_.ticks);
  Publish(now.ticks, now.ns, static_cast<uint64_t>(ns_per_tick * (1ull << kShift)));
}

void TickClock::Publish(uint64_t base_ticks, int64_t base_ns, uint64_t mult) {
  const uint64_t seq = seq_.load(std::memory_order_relaxed);
  seq_.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  base_ticks_.store(base_ticks, std::memory_order_relaxed);
  base_ns_.store(base_ns, std::memory_order_relaxed);
  mult_.store(mult, std::memory_order_relaxed);
  seq_.store(seq + 2, std::memory_order_release);
}

}  // namespace trainscope::pytorch
