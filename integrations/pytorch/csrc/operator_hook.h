// The framework hook a session drives: operator callbacks that can be
// switched on and off. The torch extension implements it with global
// RecordFunction callbacks (record_function_observer.h); keeping the
// interface here keeps torch headers out of the session.
//
// Usage:
//   absl::StatusOr<std::unique_ptr<OperatorHook>> hook = factory(&targets);
//   (*hook)->SetRecording(true);   // callbacks run; SetRecording(false): not even called
//   hook->reset();                 // callbacks removed
//
// Threading: SetRecording / SetShapes from any thread (one at a time);
// destruction removes the callbacks, after which none of them starts.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_OPERATOR_HOOK_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_OPERATOR_HOOK_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "observer_targets.h"

namespace trainscope::pytorch {

class OperatorHook {
 public:
  virtual ~OperatorHook() = default;
  // Operator, collective and phase recording.
  virtual void SetRecording(bool enabled) = 0;
  // Input shapes for FLOPs (costs boxing every operator's inputs while on).
  virtual void SetShapes(bool enabled) = 0;
};

// Installs the hook for `targets` (which must outlive it). At most one hook
// may be installed per process: the callbacks are plain function pointers.
using OperatorHookFactory =
    std::function<absl::StatusOr<std::unique_ptr<OperatorHook>>(const ObserverTargets* targets)>;

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_OPERATOR_HOOK_H_
