// The benchmark's floor: a global RecordFunction callback that does nothing,
// i.e. what torch itself charges for any observer at all.
//
// Usage:
//   SetEmptyCallback(true);  ... time operators ...;  SetEmptyCallback(false);
//
// Threading: from one thread at a time (the Python GIL holder).
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_EMPTY_CALLBACK_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_EMPTY_CALLBACK_H_

namespace trainscope::pytorch {

// Adds (true) or removes (false) the empty callback; idempotent.
void SetEmptyCallback(bool enabled);

// Whether any global RecordFunction callback is registered and enabled in
// this process (tests: detach leaves none behind).
bool HasGlobalCallbacks();

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_EMPTY_CALLBACK_H_
