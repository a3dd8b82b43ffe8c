// What the names and categories of a Kineto (PyTorch profiler) trace mean to
// trainscope: which events are device work, which kernels are NCCL/RCCL, what
// a runtime call does, which way a copy goes, which collective a name stands
// for and how many bytes an element of a dtype has. One copy of each rule,
// for the importer and its collaborators.
//
// Usage:
//   if (IsNcclKernelName(e.name)) kind = v1::EVENT_KIND_GPU_COLLECTIVE;
//   v1::RuntimeCall call = RuntimeCallOf("cudaLaunchKernel");  // LAUNCH
//
// Threading: pure functions.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_KINETO_NAMES_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_KINETO_NAMES_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

// Kineto's categories, as the importer treats them.
enum class KinetoCategory {
  kCpu,            // cpu_op, user_annotation, python_function, legacy events: CPU operators
  kKernel,         // kernel
  kMemcpy,         // gpu_memcpy
  kMemset,         // gpu_memset
  kRuntime,        // cuda_runtime, cuda_driver, hip_runtime (and AMD's other runtime cats)
  kGpuAnnotation,  // gpu_user_annotation: skipped (see TraceEventMapper)
  kGpuSync,        // cuda_sync: CUPTI's record of a wait, on the device's row: skipped
  kProfilerSpan,   // Trace: the profiler's own span over the whole trace: skipped
};
KinetoCategory CategoryOf(absl::string_view cat);

// ncclDevKernel_*, ncclKernel_*, and RCCL's kernels (names holding "rccl").
bool IsNcclKernelName(absl::string_view name);

// The collective a name stands for: c10d ops ("all_reduce", "allreduce",
// "_allgather_base", "reduce_scatter"), record_param_comms' "Collective name"
// and NCCL kernel names ("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
// "ncclKernel_AllGather_RING"). UNSPECIFIED when none (e.g. "wait",
// NCCL's SendRecv kernels, which serve several collectives).
v1::CollectiveKind CollectiveKindOf(absl::string_view name);

// "Memcpy HtoD (Pageable -> Device)" -> HOST_TO_DEVICE, "DtoH", "DtoD",
// "PtoP", "HtoH"; also AMD's bare kind ("HtoD").
v1::CopyKind CopyKindOf(absl::string_view name);

// cudaLaunchKernel/cuLaunchKernel/cudaGraphLaunch/hipLaunchKernel ->
// LAUNCH; cudaMemcpy*/cudaMemset*/hipMemcpy* -> COPY; *Synchronize -> SYNC.
v1::RuntimeCall RuntimeCallOf(absl::string_view name);

// Bytes per element of a record_param_comms dtype ("Float", "BFloat16",
// "c10::Half", "Long", "Byte"...); 0 when unknown.
uint32_t DtypeBytes(absl::string_view dtype);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_KINETO_NAMES_H_
