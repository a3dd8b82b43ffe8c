#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

const char* JobStateName(JobStateKind state) {
  switch (state) {
    case JobStateKind::kRunning:
      return "running";
    case JobStateKind::kIdle:
      return "idle";
    case JobStateKind::kFinished:
      return "finished";
    case JobStateKind::kHalted:
      return "halted";
    case JobStateKind::kLost:
      return "lost";
    case JobStateKind::kUnknown:
      break;
  }
  return "unknown";
}

const char* OpClassName(OpClass op_class) {
  switch (op_class) {
    case OpClass::kCompute:
      return "compute";
    case OpClass::kCollective:
      return "collective";
    case OpClass::kSend:
      return "send";
    case OpClass::kRecv:
      return "recv";
    case OpClass::kGpuKernel:
      return "GPU kernel";
    case OpClass::kGpuCollective:
      return "NCCL kernel";
    case OpClass::kGpuCopy:
      return "GPU copy";
  }
  return "?";
}

}  // namespace trainscope::viewer
