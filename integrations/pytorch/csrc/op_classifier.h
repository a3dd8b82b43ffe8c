// What the observer needs to know about an operator name, decided once per
// distinct name (the observer caches the result; see op_name_table.h).
//
// Usage:
//   OpClass c = ClassifyOp("gloo:all_reduce");   // c.collective == kAllReduce
//
// Collectives are recognised by the names c10d gives its work items in torch
// 1.13: "<backend>:<operation>" with backend gloo, nccl, mpi or ucc, e.g.
// "gloo:all_reduce" (also DDP's bucket all-reduce), "gloo:barrier",
// "gloo:send", "gloo:recv" (irecv and recv alike), "nccl:_allgather_base".
// The dispatcher ops wrapping them ("c10d::allreduce_") are plain operators.
//
// Threading: a pure function.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_CLASSIFIER_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_CLASSIFIER_H_

#include <cstdint>
#include <string_view>

#include "trainscope/agent/event_record.h"

namespace trainscope::pytorch {

// Operators whose FLOPs are computed from input shapes (trainscope/ops/flop_formulas.h).
enum class FlopOp : uint8_t {
  kNone,
  kConv2d,       // aten::conv2d(input, weight, bias, stride, padding, dilation, groups)
  kConvolution,  // aten::convolution(input, weight, bias, stride, padding, dilation,
                 //                   transposed, output_padding, groups)
  kLinear,       // aten::linear(input, weight, bias)
  kAddmm,        // aten::addmm(self, mat1, mat2, ...)
  kMm,           // aten::mm(self, mat2)
  kMatmul,       // aten::matmul(self, other)
  kBmm,          // aten::bmm(self, mat2)
};

struct OpClass {
  bool is_collective = false;
  agent::CollectiveKind collective = agent::CollectiveKind::kUnspecified;
  bool is_point_to_point = false;  // send / recv: sequence counted per peer
  FlopOp flop = FlopOp::kNone;
  // Autograd's per-node wrapper ("autograd::engine::evaluate_function: ...");
  // everything inside it is backward work.
  bool opens_backward = false;
  bool optimizer_step = false;  // "Optimizer.step#SGD.step": the optimizer phase
  // Bookkeeping ranges that say nothing about forward/backward timing
  // ("Optimizer.zero_grad#...", "profiler::_record_function_enter", ...).
  bool excluded_from_phases = false;
};

OpClass ClassifyOp(std::string_view name);

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_CLASSIFIER_H_
