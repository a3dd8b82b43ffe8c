#include "gpu/cuda_device_query.h"

#include <dlfcn.h>

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::agent {

absl::StatusOr<CudaDriverApi> CudaDeviceQuery::Load(const std::string& library) {
  // RTLD_NOLOAD first: the process's CUDA (torch's) is usually loaded already.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(absl::StrCat("no CUDA driver: dlopen(", library,
                                            ") failed: ", why != nullptr ? why : "unknown error"));
  }
  CudaDriverApi api;
  std::string missing;
  auto resolve = [&](auto& slot, const char* symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, symbol));
    if (slot == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", symbol);
  };
  resolve(api.init, "cuInit");
  resolve(api.device_get_count, "cuDeviceGetCount");
  resolve(api.device_get, "cuDeviceGet");
  resolve(api.device_get_name, "cuDeviceGetName");
  resolve(api.device_total_mem, "cuDeviceTotalMem_v2");
  resolve(api.device_get_attribute, "cuDeviceGetAttribute");
  if (!missing.empty()) {
    // The handle stays open: dlclose of a driver the process may use is not worth the risk.
    return absl::FailedPreconditionError(
        absl::StrCat(library, " lacks ", missing, " (not a CUDA driver library?)"));
  }
  return api;
}

absl::StatusOr<std::vector<v1::GpuDevice>> CudaDeviceQuery::List(const CudaDriverApi& api) {
  if (const int result = api.init(0); result != 0) {
    return absl::UnavailableError(
        absl::StrCat("cuInit failed with CUresult ", result, " (no usable CUDA driver or GPU?)"));
  }
  int count = 0;
  if (const int result = api.device_get_count(&count); result != 0) {
    return absl::UnavailableError(absl::StrCat("cuDeviceGetCount failed with CUresult ", result));
  }
  std::vector<v1::GpuDevice> devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    if (api.device_get(&device, ordinal) != 0) continue;
    v1::GpuDevice gpu;
    gpu.set_index(static_cast<uint32_t>(ordinal));
    gpu.set_vendor("nvidia");
    std::array<char, 256> name{};
    if (api.device_get_name(name.data(), static_cast<int>(name.size() - 1), device) == 0) {
      gpu.set_name(name.data());
    }
    size_t bytes = 0;
    if (api.device_total_mem(&bytes, device) == 0) gpu.set_memory_bytes(bytes);
    int value = 0;
    if (api.device_get_attribute(&value, kMultiprocessorCount, device) == 0 && value > 0) {
      gpu.set_multiprocessors(static_cast<uint32_t>(value));
    }
    int major = 0;
    int minor = 0;
    if (api.device_get_attribute(&major, kComputeCapabilityMajor, device) == 0 &&
        api.device_get_attribute(&minor, kComputeCapabilityMinor, device) == 0) {
      gpu.set_compute_capability(absl::StrCat(major, ".", minor));
    }
    gpu.set_peak_flops(PeakBf16Flops(gpu.name()));
    devices.push_back(std::move(gpu));
  }
  return devices;
}

double CudaDeviceQuery::PeakBf16Flops(std::string_view name) {
  // NVIDIA's data sheets, dense (without sparsity). Most specific names first.
  static constexpr std::pair<std::string_view, double> kPeaks[] = {
      {"H100 PCIe", 756e12}, {"H100 NVL", 835e12}, {"H100", 989e12},
      {"H200", 989e12},      {"GH200", 989e12},    {"A100", 312e12},
  };
  for (const auto& [model, flops] : kPeaks) {
    if (name.find(model) != std::string_view::npos) return flops;
  }
  return 0;
}

}  // namespace trainscope::agent
