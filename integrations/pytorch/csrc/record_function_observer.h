// The operator hook of the torch extension: global at::RecordFunction
// callbacks that record every operator, collective and FLOPs counter of the
// process into the session's agent.
//
// Usage (the session's hook installer, trainscope_session.h):
//   trainscope_session_start(&options, &InstallRecordFunctionObserver, nullptr, &session, ...);
//
// What is recorded, per operator (one EVENT_KIND_OPERATOR at its end):
//   name (interned once per distinct name), start and end (TickClock mapped
//   onto CLOCK_MONOTONIC), scope (backward inside autograd's
//   evaluate_function or a BACKWARD_FUNCTION range, else forward), value =
//   autograd sequence number + 1 (0: the operator has none), the recording
//   thread (the agent ring's thread).
// Collectives ("gloo:all_reduce", ...): EVENT_KIND_COLLECTIVE with bytes of
//   the input tensors, group and peer (the call's tag, collective_tag.h),
//   per-group (per-peer for send/recv) sequence number; they may end on
//   another thread (c10d work items are async RecordFunctions).
// FLOPs: while shapes are on, the outermost of aten::conv2d / convolution /
//   linear / addmm / mm / matmul / bmm (not the ones they call, so nothing
//   counts twice) gets a COUNTER "flops" right after its operator event, on
//   the same thread with time == the operator's end: value = its FLOPs.
// Optimizer: the "Optimizer.step#..." range also gives PHASE_OPTIMIZER with
//   the step it ran in. Top-level operators feed the StepPhaseTracker.
//
// Cost: the steady state allocates nothing, takes no lock and calls nothing
// but torch's rf.name() and rf.isAsync(): per operator two TSC reads, a
// pointer-keyed per-thread name cache (hits verified by 16-byte compares), a
// frame on a per-thread stack and one raw 48-byte record written straight
// into the thread's agent ring (ticks and the name's id; the sender maps the
// ticks to ns). The callbacks are instantiated per clock and GPU choice, so
// the session's choices cost no test per operator. FLOP operators with FLOPs and optimizer ranges take one call into the
// agent library instead. Collectives allocate their async
// context (c10d allocates far more for each). Shapes cost torch's boxing of
// every operator's inputs, hence SetShapes.
//
// GPU: operators are timed on the host; with GPU activity on (the session's
// gpu_activity) each timed operator is bracketed on its thread for CUPTI
// (trainscope_observer_gpu_operator_begin/end), so the kernels, copies and
// memsets it launches carry it as their launching operator; the agent
// records their device times itself. NCCL kernels of collectives are not
// yet bracketed as collectives (c10d ends their range on another thread).
//
// Threading: the callbacks run on every thread that runs operators. At most
// one observer is installed per process (the callbacks are plain function
// pointers and reach their targets through one process-wide pointer).
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_RECORD_FUNCTION_OBSERVER_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_RECORD_FUNCTION_OBSERVER_H_

#include <cstddef>

#include "trainscope_session.h"

namespace trainscope::pytorch {

// A trainscope_hook_install: registers the callbacks (disabled until
// set_recording(1)). Fails (non-zero, with the message in error) while
// another observer is installed.
int InstallRecordFunctionObserver(void* user_data, const trainscope_observer* observer,
                                  trainscope_hook* out, char* error, size_t error_len);

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_RECORD_FUNCTION_OBSERVER_H_
