// Paces one producer's Record calls at a rate, without catch-up bursts.
//
// Usage (one producer thread):
//   Pacer pacer(/*rate=*/20000, absl::Now());
//   for (...) {
//     workload.Next();
//     absl::SleepFor(pacer.Wait(absl::Now()));
//   }
//   pacer.slips();   // how often the producer fell behind by more than max_lag
//
// A producer that falls behind its schedule by more than max_lag (its thread
// starved by the scheduler on a loaded machine) resumes the pace from now
// instead of making the deficit up in one burst. A training process that is
// slowed down does less work; it does not later record what it missed all at
// once. Catching up would record lag × rate events in a single time slice: a
// producer starved for a second at 20,000 events/s writes 20,000 events at once
// into a ring of 16,384, and the ring_full drops that follow measure the
// scheduler, not the agent (tests/python/test_message_limit.py flaked so at
// a load of 30 on 2 cores, its producers waiting for a CPU 4.4 s of 5).
//
// Threading: not thread-safe; one producer owns it.
#ifndef TRAINSCOPE_BENCH_LOADGEN_PACER_H_
#define TRAINSCOPE_BENCH_LOADGEN_PACER_H_

#include <cstdint>

#include "absl/time/time.h"

namespace trainscope::loadgen {

class Pacer {
 public:
  // At 20,000 events/s a burst after a stall is at most 400 events.
  static constexpr absl::Duration kDefaultMaxLag = absl::Milliseconds(20);

  // `rate`: calls per second; 0 or less: no pacing (Wait is always zero).
  Pacer(double rate, absl::Time start, absl::Duration max_lag = kDefaultMaxLag);

  // After a call made at `now`: how long to wait before the next one (zero
  // when it is due already).
  absl::Duration Wait(absl::Time now);

  // Times the schedule moved forward because the producer was more than
  // max_lag behind it.
  uint64_t slips() const { return slips_; }

 private:
  const bool paced_;
  const absl::Duration interval_;
  const absl::Duration max_lag_;
  absl::Time next_due_;
  uint64_t slips_ = 0;
};

}  // namespace trainscope::loadgen

#endif  // TRAINSCOPE_BENCH_LOADGEN_PACER_H_
