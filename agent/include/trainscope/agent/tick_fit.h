// A linear map from a raw tick counter (the TSC) onto the agent's primary
// clock (CLOCK_MONOTONIC ns), and what provides it.
//
// Usage:
//   TickFit fit{base_ticks, base_ns, mult};   // mult: ns per tick << TickFit::kShift
//   int64_t ns = fit.ToNs(ticks);
//   agent->SetTickMapper(&clock);              // clock: a TickMapper (the plugin's TickClock)
//
// Why: a hook that writes raw ticks (trainscope_raw_ring_push_operator) leaves
// the conversion to the sender thread, which reads the current fit once per
// drain and applies it to every raw record of that drain.
//
// Threading: TickFit is a value. A TickMapper's CurrentFit() may be called
// from any thread (the sender's) while its owner recalibrates.
#ifndef TRAINSCOPE_AGENT_TICK_FIT_H_
#define TRAINSCOPE_AGENT_TICK_FIT_H_

#include <cstdint>

namespace trainscope::agent {

struct TickFit {
  static constexpr int kShift = 32;
  uint64_t base_ticks = 0;
  int64_t base_ns = 0;
  uint64_t mult = uint64_t{1} << kShift;  // ns per tick, fixed point; default: ticks are ns

  // Ticks are ns already (no TSC): the identity.
  static constexpr TickFit Identity() { return TickFit{}; }

  // Ticks before the base map below base_ns (signed delta), so a fit
  // re-anchored after a record was written still maps it.
  int64_t ToNs(uint64_t ticks) const {
    const __int128 delta = static_cast<__int128>(static_cast<int64_t>(ticks - base_ticks));
    return base_ns + static_cast<int64_t>((delta * static_cast<__int128>(mult)) >> kShift);
  }
};

// Provides the current fit; implemented by the owner of the tick clock.
class TickMapper {
 public:
  virtual ~TickMapper() = default;
  virtual TickFit CurrentFit() const = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_TICK_FIT_H_
