// One operator of a closed step, on the reference clock and on its device's
// own clock: what StepAssembler emits and OperatorStore keeps. A compact
// stand-in for trainscope.v1.AlignedOperator (names stay JobStrings ids);
// OperatorBatchBuilder turns records into protos when they are published.
//
// A CPU operator lives on a thread; device work (op_class GPU_*) lives on a
// GPU stream: thread 0, gpu_device and gpu_stream say where, correlation and
// launch_op name the CPU launch it came from.
//
// Usage:
//   OperatorRecord op;  // filled by StepAssembler
//   if (op.is_communication()) ...
//   op.op_class = OperatorRecord::GpuClassOf(event.kind);  // a GPU event's class
//
// Threading: plain value type.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_RECORD_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_RECORD_H_

#include <cstdint>

#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

struct OperatorRecord {
  int64_t start_ns = 0;  // reference clock
  int64_t end_ns = 0;
  int64_t raw_start_ns = 0;  // the device's own clock
  int64_t raw_end_ns = 0;
  uint64_t step = 0;
  uint64_t op_sequence = 0;  // compute: the framework's operator sequence number
  uint64_t flops = 0;        // compute: the "flops" counter recorded at its end
  uint64_t bytes = 0;        // communication
  uint64_t group_sequence = 0;
  uint32_t rank = 0;
  uint32_t name = 0;   // JobStrings id
  uint32_t group = 0;  // JobStrings id
  uint32_t thread = 0;
  uint32_t stage = 0;
  int32_t peer = -1;
  trainscope::v1::OperatorClass op_class = trainscope::v1::OPERATOR_CLASS_UNSPECIFIED;
  trainscope::v1::OperatorScope scope = trainscope::v1::OPERATOR_SCOPE_UNSPECIFIED;
  trainscope::v1::CollectiveKind collective_kind = trainscope::v1::COLLECTIVE_KIND_UNSPECIFIED;
  // GPU work only (is_gpu()).
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
  uint32_t launch_op = 0;    // JobStrings id of the launching CPU operator; 0: unknown
  uint64_t correlation = 0;  // launch correlation id; 0: unknown

  // CPU compute operators (what density bins merge).
  bool is_compute() const { return op_class == trainscope::v1::OPERATOR_CLASS_COMPUTE; }
  bool is_gpu() const {
    return op_class == trainscope::v1::OPERATOR_CLASS_GPU_KERNEL ||
           op_class == trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE ||
           op_class == trainscope::v1::OPERATOR_CLASS_GPU_COPY;
  }
  // Collectives, sends and receives, on the CPU or as NCCL kernels: what
  // carries a group, a sequence, a peer and bytes.
  bool is_communication() const {
    return op_class == trainscope::v1::OPERATOR_CLASS_COLLECTIVE ||
           op_class == trainscope::v1::OPERATOR_CLASS_SEND ||
           op_class == trainscope::v1::OPERATOR_CLASS_RECV ||
           op_class == trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE;
  }
  // The class of a GPU event (DeviceEvent::IsGpu()): kernels, NCCL kernels,
  // copies and memsets; UNSPECIFIED for any other kind.
  static trainscope::v1::OperatorClass GpuClassOf(trainscope::v1::EventKind kind) {
    switch (kind) {
      case trainscope::v1::EVENT_KIND_GPU_KERNEL:
        return trainscope::v1::OPERATOR_CLASS_GPU_KERNEL;
      case trainscope::v1::EVENT_KIND_GPU_COLLECTIVE:
        return trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE;
      case trainscope::v1::EVENT_KIND_GPU_MEMCPY:
      case trainscope::v1::EVENT_KIND_GPU_MEMSET:
        return trainscope::v1::OPERATOR_CLASS_GPU_COPY;
      default:
        return trainscope::v1::OPERATOR_CLASS_UNSPECIFIED;
    }
  }
  int64_t Start(bool raw) const { return raw ? raw_start_ns : start_ns; }
  int64_t End(bool raw) const { return raw ? raw_end_ns : end_ns; }
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_RECORD_H_
