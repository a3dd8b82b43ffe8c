// Derives the forward / backward / data-wait phases of a step from the
// top-level operators the observer sees, so phases come without user code.
//
// Usage (observer, at the end of each top-level operator):
//   tracker.OnTopLevelOp(start_ns, end_ns, /*backward=*/false);
// Usage (session, at the step boundary):
//   StepPhaseTracker::Spans spans = tracker.TakeAndReset();
//
// Definitions, per step: forward = first to last top-level forward operator
// before the first backward one; backward = first to last top-level backward
// operator; data wait = from the previous step boundary to the first operator
// of the step (data loading and Python work between steps). The optimizer
// phase is the "Optimizer.step#..." range itself (recorded by the observer).
//
// Threading: OnTopLevelOp from any thread, TakeAndReset from the training
// thread. Relaxed atomics: operators of one step are ordered by the training
// thread; a torn read at a boundary costs one phase's accuracy, not safety.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_STEP_PHASE_TRACKER_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_STEP_PHASE_TRACKER_H_

#include <atomic>
#include <cstdint>

namespace trainscope::pytorch {

class StepPhaseTracker {
 public:
  void OnTopLevelOp(int64_t start_ns, int64_t end_ns, bool backward) {
    if (backward) {
      if (backward_first_.load(std::memory_order_relaxed) == 0) {
        backward_first_.store(start_ns, std::memory_order_relaxed);
      }
      backward_last_.store(end_ns, std::memory_order_relaxed);
      return;
    }
    if (forward_first_.load(std::memory_order_relaxed) == 0) {
      forward_first_.store(start_ns, std::memory_order_relaxed);
    }
    if (backward_first_.load(std::memory_order_relaxed) == 0) {
      forward_last_.store(end_ns, std::memory_order_relaxed);
    }
  }

  struct Spans {
    int64_t forward_start = 0, forward_end = 0;  // 0: none this step
    int64_t backward_start = 0, backward_end = 0;
  };

  Spans TakeAndReset() {
    Spans s;
    s.forward_start = forward_first_.exchange(0, std::memory_order_relaxed);
    s.forward_end = forward_last_.exchange(0, std::memory_order_relaxed);
    s.backward_start = backward_first_.exchange(0, std::memory_order_relaxed);
    s.backward_end = backward_last_.exchange(0, std::memory_order_relaxed);
    return s;
  }

 private:
  std::atomic<int64_t> forward_first_{0};
  std::atomic<int64_t> forward_last_{0};
  std::atomic<int64_t> backward_first_{0};
  std::atomic<int64_t> backward_last_{0};
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_STEP_PHASE_TRACKER_H_
