// Cheap timestamps for the operator hot path, in the agent's primary clock
// (CLOCK_MONOTONIC nanoseconds, see Agent::Now()).
//
// Usage:
//   TickClock clock(TickClock::Source::kAuto);
//   uint64_t t0 = clock.Ticks();  ...;  uint64_t t1 = clock.Ticks();
//   int64_t start_ns = clock.ToMonotonicNs(t0), end_ns = clock.ToMonotonicNs(t1);
//   clock.Recalibrate();  // every ~100 ms from one background thread
//
// Why: clock_gettime costs ~45 ns on these VMs and an operator needs two
// timestamps, while the whole per-operator budget is a few tens of ns. With an
// invariant TSC (constant_tsc and nonstop_tsc in /proc/cpuinfo, the kernel's
// clocksource is tsc) a raw rdtsc is read on the hot path and mapped onto
// CLOCK_MONOTONIC with a linear fit that Recalibrate() keeps anchored, so
// the error against Agent::Now() stays well under a microsecond. Without an
// invariant TSC, ticks are Agent::Now() nanoseconds and the map is the identity.
//
// The agent's sender maps raw operator records through CurrentFit() (a
// TickMapper), so the operator hot path converts nothing.
//
// Threading: Ticks(), ToMonotonicNs() and CurrentFit() from any thread, lock-free (the fit
// is read under a sequence lock). Recalibrate() from one thread at a time.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_CLOCK_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_CLOCK_H_

#include <x86intrin.h>

#include <atomic>
#include <cstdint>

#include "trainscope/agent/agent.h"
#include "trainscope/agent/tick_fit.h"

namespace trainscope::pytorch {

class TickClock final : public agent::TickMapper {
 public:
  enum class Source { kAuto, kMonotonic };

  // kAuto uses the TSC when it is invariant and the kernel's clocksource;
  // this spends ~2 ms sampling both clocks for the first fit.
  explicit TickClock(Source source);

  bool uses_tsc() const { return use_tsc_; }

  uint64_t Ticks() const {
    if (use_tsc_) return __rdtsc();
    return static_cast<uint64_t>(agent::Agent::Now());
  }

  int64_t ToMonotonicNs(uint64_t ticks) const {
    if (!use_tsc_) return static_cast<int64_t>(ticks);
    return ReadFit().ToNs(ticks);
  }

  // The fit now (the identity without the TSC): what the agent's sender maps
  // raw operator records with, once per drain (AgentOptions::tick_mapper).
  agent::TickFit CurrentFit() const override {
    return use_tsc_ ? ReadFit() : agent::TickFit::Identity();
  }

  // ToMonotonicNs(end_ticks) and the span back to start_ticks, with one read
  // of the fit: the operator hot path converts both ends at once.
  void ToMonotonicNs(uint64_t start_ticks, uint64_t end_ticks, int64_t* start_ns,
                     int64_t* end_ns) const {
    if (!use_tsc_) {
      *start_ns = static_cast<int64_t>(start_ticks);
      *end_ns = static_cast<int64_t>(end_ticks);
      return;
    }
    const agent::TickFit fit = ReadFit();
    *end_ns = fit.ToNs(end_ticks);
    *start_ns =
        *end_ns -
        static_cast<int64_t>((static_cast<__int128>(static_cast<int64_t>(end_ticks - start_ticks)) *
                              static_cast<__int128>(fit.mult)) >>
                             agent::TickFit::kShift);
  }

  // Refits ns-per-tick over the whole time since construction and re-anchors
  // at the present. No-op without the TSC.
  void Recalibrate();

 private:
  static constexpr int kShift = agent::TickFit::kShift;
  agent::TickFit ReadFit() const {
    agent::TickFit fit;
    uint64_t seq;
    do {
      seq = seq_.load(std::memory_order_acquire);
      fit.base_ticks = base_ticks_.load(std::memory_order_relaxed);
      fit.base_ns = base_ns_.load(std::memory_order_relaxed);
      fit.mult = mult_.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
    } while ((seq & 1) != 0 || seq != seq_.load(std::memory_order_relaxed));
    return fit;
  }
  struct Pair {
    uint64_t ticks;
    int64_t ns;
  };
  // A (tsc, monotonic) pair read close together: the tightest of a few tries.
  static Pair Sample();
  void Publish(uint64_t base_ticks, int64_t base_ns, uint64_t mult);

  bool use_tsc_ = false;
  Pair origin_{};
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> base_ticks_{0};
  std::atomic<int64_t> base_ns_{0};
  std::atomic<uint64_t> mult_{0};  // ns per tick, fixed point with kShift bits
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_CLOCK_H_
