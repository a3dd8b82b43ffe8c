#include "trainscope/collector/import/kineto_names.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace trainscope::collector {

KinetoCategory CategoryOf(absl::string_view cat) {
  if (cat == "kernel") return KinetoCategory::kKernel;
  if (cat == "gpu_memcpy") return KinetoCategory::kMemcpy;
  if (cat == "gpu_memset") return KinetoCategory::kMemset;
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "hip_runtime" ||
      cat == "hip_driver" || cat == "privateuse1_runtime") {
    return KinetoCategory::kRuntime;
  }
  if (cat == "gpu_user_annotation") return KinetoCategory::kGpuAnnotation;
  if (cat == "cuda_sync") return KinetoCategory::kGpuSync;
  if (cat == "Trace") return KinetoCategory::kProfilerSpan;
  return KinetoCategory::kCpu;
}

bool IsNcclKernelName(absl::string_view name) {
  // Kernel names may come wrapped ("void ncclKernel_..."): look anywhere.
  return absl::StrContains(name, "ncclDevKernel_") || absl::StrContains(name, "ncclKernel_") ||
         absl::StrContains(absl::AsciiStrToLower(name), "rccl");
}

v1::CollectiveKind CollectiveKindOf(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  // NCCL's point-to-point kernel runs all-to-all, send, recv alike.
  if (absl::StrContains(lower, "sendrecv")) return v1::COLLECTIVE_KIND_UNSPECIFIED;
  // Longest names first: "reduce_scatter" before "reduce"; "allreduce" before "reduce".
  static constexpr std::pair<const char*, v1::CollectiveKind> kKinds[] = {
      {"reduce_scatter", v1::COLLECTIVE_KIND_REDUCE_SCATTER},
      {"reducescatter", v1::COLLECTIVE_KIND_REDUCE_SCATTER},
      {"all_reduce", v1::COLLECTIVE_KIND_ALL_REDUCE},
      {"allreduce", v1::COLLECTIVE_KIND_ALL_REDUCE},
      {"all_gather", v1::COLLECTIVE_KIND_ALL_GATHER},
      {"allgather", v1::COLLECTIVE_KIND_ALL_GATHER},
      {"all_to_all", v1::COLLECTIVE_KIND_ALL_TO_ALL},
      {"alltoall", v1::COLLECTIVE_KIND_ALL_TO_ALL},
      {"broadcast", v1::COLLECTIVE_KIND_BROADCAST},
      {"barrier", v1::COLLECTIVE_KIND_BARRIER},
      {"scatter", v1::COLLECTIVE_KIND_SCATTER},
      {"recv", v1::COLLECTIVE_KIND_RECV},
      {"send", v1::COLLECTIVE_KIND_SEND},
      {"reduce", v1::COLLECTIVE_KIND_REDUCE},
      {"gather", v1::COLLECTIVE_KIND_GATHER},
  };
  for (const auto& [key, kind] : kKinds) {
    if (absl::StrContains(lower, key)) return kind;
  }
  return v1::COLLECTIVE_KIND_UNSPECIFIED;
}

v1::CopyKind CopyKindOf(absl::string_view name) {
  static constexpr std::pair<const char*, v1::CopyKind> kKinds[] = {
      {"HtoD", v1::COPY_KIND_HOST_TO_DEVICE},   {"DtoH", v1::COPY_KIND_DEVICE_TO_HOST},
      {"DtoD", v1::COPY_KIND_DEVICE_TO_DEVICE}, {"PtoP", v1::COPY_KIND_PEER_TO_PEER},
      {"HtoH", v1::COPY_KIND_HOST_TO_HOST},
  };
  for (const auto& [key, kind] : kKinds) {
    if (absl::StrContains(name, key)) return kind;
  }
  return v1::COPY_KIND_UNSPECIFIED;
}

v1::RuntimeCall RuntimeCallOf(absl::string_view name) {
  if (absl::StrContains(name, "Synchronize")) return v1::RUNTIME_CALL_SYNC;
  if (absl::StrContains(name, "Launch")) return v1::RUNTIME_CALL_LAUNCH;
  if (absl::StrContains(name, "Memcpy") || absl::StrContains(name, "Memset")) {
    return v1::RUNTIME_CALL_COPY;
  }
  return v1::RUNTIME_CALL_OTHER;
}

uint32_t DtypeBytes(absl::string_view dtype) {
  std::string lower = absl::AsciiStrToLower(dtype);
  if (absl::StartsWith(lower, "c10::")) lower = lower.substr(5);
  static constexpr std::pair<const char*, uint32_t> kSizes[] = {
      {"double", 8}, {"long", 8}, {"int64", 8},    {"complexfloat", 8}, {"float", 4},
      {"int", 4},    {"half", 2}, {"bfloat16", 2}, {"short", 2},        {"byte", 1},
      {"char", 1},   {"bool", 1}, {"int8", 1},     {"uint8", 1},        {"float8", 1},
  };
  for (const auto& [name, size] : kSizes) {
    if (lower == name) return size;
  }
  // "Float8_e4m3fn", "Int32"...: by prefix, longest first handled above.
  if (absl::StartsWith(lower, "float8")) return 1;
  if (absl::StartsWith(lower, "int32") || absl::StartsWith(lower, "uint32")) return 4;
  return 0;
}

}  // namespace trainscope::collector
