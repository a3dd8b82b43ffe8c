// Narrows CUPTI's RUNTIME and DRIVER activity records to the calls the
// tracer uses: those that launch work, copy, set memory or synchronise (what
// ActivityRecordConverter keeps).
//
// Why: with the two kinds enabled wholesale CUPTI writes a record for every
// cudaGetDevice, cudaStreamIsCapturing, cuCtxGetCurrent ... that PyTorch
// makes around each operator, most of the records, for calls the converter
// then drops; on a launch-bound ResNet-50 step on an H100 that was about a
// tenth of the step (docs/benchmarks.md). CUPTI 12.4+ can switch single calls
// (cuptiActivityEnableRuntimeApi/DriverApi). Enabling only the wanted calls
// without the kinds gave no records at all with CUPTI 13.0, so the kinds stay
// enabled and every other call is switched off after them; enabling a kind
// again (the next Acquire, or another client such as torch.profiler) undoes
// this, so it runs after every enable.
//
// Usage:
//   api.activity_enable(CUPTI_ACTIVITY_KIND_RUNTIME);
//   api.activity_enable(CUPTI_ACTIVITY_KIND_DRIVER);
//   size_t off = TracedApiCalls::DropOthers(api);  // 0 with an older CUPTI
//
// Threading: stateless; call it where the kinds are enabled (the tracer's
// state lock).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_TRACED_API_CALLS_H_
#define TRAINSCOPE_AGENT_SRC_GPU_TRACED_API_CALLS_H_

#include <cupti.h>

#include <cstddef>

#include "gpu/cupti_api.h"

namespace trainscope::agent {

class TracedApiCalls {
 public:
  // Switches off the records of every runtime and driver call the converter
  // drops, found by name (cuptiGetCallbackName) over the callback ids this
  // build knows; returns how many. 0, touching nothing, when this CUPTI
  // cannot switch single calls.
  static size_t DropOthers(const CuptiApi& api);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_TRACED_API_CALLS_H_
