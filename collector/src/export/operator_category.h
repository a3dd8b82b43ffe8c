// The category an exported operator carries (Chrome "cat", Perfetto
// categories): its class's name; GPU work takes Kineto's categories
// ("kernel" for kernels and NCCL kernels alike, "gpu_memcpy", "gpu_memset")
// so tools that read Kineto traces read ours. Private to the export library.
#ifndef TRAINSCOPE_COLLECTOR_SRC_EXPORT_OPERATOR_CATEGORY_H_
#define TRAINSCOPE_COLLECTOR_SRC_EXPORT_OPERATOR_CATEGORY_H_

#include <string_view>

#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

inline bool IsGpuClass(trainscope::v1::OperatorClass c) {
  return c == trainscope::v1::OPERATOR_CLASS_GPU_KERNEL ||
         c == trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE ||
         c == trainscope::v1::OPERATOR_CLASS_GPU_COPY;
}

// What carries a group, a sequence, a peer and bytes (and is linked by flows).
inline bool IsCommunicationClass(trainscope::v1::OperatorClass c) {
  return c == trainscope::v1::OPERATOR_CLASS_COLLECTIVE ||
         c == trainscope::v1::OPERATOR_CLASS_SEND || c == trainscope::v1::OPERATOR_CLASS_RECV ||
         c == trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE;
}

// `name` tells a memset from a memcpy (both are GPU_COPY; Kineto names
// memsets "Memset (Device)").
inline const char* OperatorCategory(trainscope::v1::OperatorClass c, std::string_view name = {}) {
  switch (c) {
    case trainscope::v1::OPERATOR_CLASS_GPU_KERNEL:
    case trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE:
      return "kernel";
    case trainscope::v1::OPERATOR_CLASS_GPU_COPY:
      return name.substr(0, 6) == "Memset" ? "gpu_memset" : "gpu_memcpy";
    case trainscope::v1::OPERATOR_CLASS_COLLECTIVE:
      return "collective";
    case trainscope::v1::OPERATOR_CLASS_SEND:
      return "send";
    case trainscope::v1::OPERATOR_CLASS_RECV:
      return "recv";
    default:
      return "compute";
  }
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_SRC_EXPORT_OPERATOR_CATEGORY_H_
