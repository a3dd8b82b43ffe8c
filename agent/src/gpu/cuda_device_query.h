// The CUDA devices this process can see, for Hello.gpus (name, memory,
// multiprocessors, compute capability, bf16 peak where known), read through
// the CUDA driver API loaded at run time: nothing links CUDA, and a machine
// without a driver (no libcuda.so.1, or cuInit failing) gets an empty list and
// a reason, never an error that stops the agent.
//
// Usage (by Agent, when AgentOptions::gpu_activity):
//   absl::StatusOr<CudaDriverApi> api = CudaDeviceQuery::Load();
//   absl::StatusOr<std::vector<v1::GpuDevice>> gpus =
//       api.ok() ? CudaDeviceQuery::List(*api) : api.status();
//
// The function table is plain pointers so tests fill it with fakes. The driver
// API's types are spelled here as their C types (CUdevice and CUresult are
// int, CUdevice_attribute values are the driver's), so this compiles without
// CUDA's headers. GpuDevice.index is the CUDA device ordinal, the deviceId
// CUPTI's records name (both follow CUDA_VISIBLE_DEVICES).
//
// Threading: stateless; the driver's functions are thread-safe.
#ifndef TRAINSCOPE_AGENT_SRC_GPU_CUDA_DEVICE_QUERY_H_
#define TRAINSCOPE_AGENT_SRC_GPU_CUDA_DEVICE_QUERY_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::agent {

struct CudaDriverApi {
  int (*init)(unsigned int flags) = nullptr;                             // cuInit
  int (*device_get_count)(int* count) = nullptr;                         // cuDeviceGetCount
  int (*device_get)(int* device, int ordinal) = nullptr;                 // cuDeviceGet
  int (*device_get_name)(char* name, int length, int device) = nullptr;  // cuDeviceGetName
  int (*device_total_mem)(size_t* bytes, int device) = nullptr;          // cuDeviceTotalMem_v2
  int (*device_get_attribute)(int* value, int attribute, int device) = nullptr;
};

class CudaDeviceQuery {
 public:
  // CUdevice_attribute values (cuda.h).
  static constexpr int kMultiprocessorCount = 16;
  static constexpr int kComputeCapabilityMajor = 75;
  static constexpr int kComputeCapabilityMinor = 76;

  // dlopens `library` (kept loaded) and resolves the table; an error names
  // the library and what is missing.
  static absl::StatusOr<CudaDriverApi> Load(const std::string& library = "libcuda.so.1");
  // Every visible device; an error (cuInit failing: no usable driver or
  // GPU) names the call and its CUresult. A device whose name or memory
  // cannot be read is listed with what could be.
  static absl::StatusOr<std::vector<v1::GpuDevice>> List(const CudaDriverApi& api);
  // Dense bf16 FLOP/s of well-known data-centre GPUs by their name; 0 for
  // any other (GpuDevice.peak_flops: unknown).
  static double PeakBf16Flops(std::string_view name);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_CUDA_DEVICE_QUERY_H_
