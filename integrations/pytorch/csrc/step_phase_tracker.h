// Derives the forward / backward / data-wait phases of a step from the
// top-level operators the observer sees, so phases come without user code.
//
// Usage (observer, at the end of each top-level operator, in clock ticks):
//   tracker.OnTopLevelOp(start_ticks, end_ticks, /*backward=*/false);
//   // or, from the torch extension without a call:
//   trainscope_phase_ticks_update(tracker.ticks(), start_ticks, end_ticks, 0);
// Usage (session, at the step boundary):
//   StepPhaseTracker::Spans spans = tracker.TakeAndReset(clock);  // in ns
//
// Definitions, per step: forward = first to last top-level forward operator
// before the first backward one; backward = first to last top-level backward
// operator; data wait = from the previous step boundary to the first operator
// of the step (data loading and Python work between steps). The optimizer
// phase is the "Optimizer.step#..." range itself (recorded by the observer).
// The rule is trainscope_phase_ticks_update (trainscope_session.h), one copy
// for both callers. Ticks stay raw until the boundary: the hot path maps nothing.
//
// Threading: OnTopLevelOp / trainscope_phase_ticks_update from any thread,
// TakeAndReset from the training thread. Relaxed atomics: operators of one
// step are ordered by the training thread; a torn read at a boundary costs
// one phase's accuracy, not safety.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_STEP_PHASE_TRACKER_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_STEP_PHASE_TRACKER_H_

#include <cstdint>

#include "clock.h"
#include "trainscope_session.h"

namespace trainscope::pytorch {

class StepPhaseTracker {
 public:
  void OnTopLevelOp(uint64_t start_ticks, uint64_t end_ticks, bool backward) {
    trainscope_phase_ticks_update(&ticks_, start_ticks, end_ticks, backward ? 1 : 0);
  }

  trainscope_phase_ticks* ticks() { return &ticks_; }

  struct Spans {
    int64_t forward_start = 0, forward_end = 0;  // 0: none this step
    int64_t backward_start = 0, backward_end = 0;
  };

  // The step's spans in the clock's ns, and a fresh start.
  Spans TakeAndReset(const TickClock& clock) {
    const auto take = [&clock](uint64_t* word) -> int64_t {
      const uint64_t ticks = __atomic_exchange_n(word, 0, __ATOMIC_RELAXED);
      return ticks == 0 ? 0 : clock.ToMonotonicNs(ticks);
    };
    Spans s;
    s.forward_start = take(&ticks_.forward_first);
    s.forward_end = take(&ticks_.forward_last);
    s.backward_start = take(&ticks_.backward_first);
    s.backward_end = take(&ticks_.backward_last);
    return s;
  }

 private:
  trainscope_phase_ticks ticks_{0, 0, 0, 0};
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_STEP_PHASE_TRACKER_H_
