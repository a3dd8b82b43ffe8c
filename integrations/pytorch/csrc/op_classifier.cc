#include "op_classifier.h"

#include <array>
#include <utility>

namespace trainscope::pytorch {
namespace {

using agent::CollectiveKind;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// c10d names the operation after the backend prefix; the NCCL base variants
// carry a leading underscore ("_allgather_base", "_reduce_scatter_base").
CollectiveKind CollectiveFromOperation(std::string_view op) {
  while (!op.empty() && op.front() == '_') op.remove_prefix(1);
  // Longer names first: "all_reduce" before "reduce", "reduce_scatter" before
  // "scatter", "all_gather" before "gather".
  static constexpr std::array<std::pair<std::string_view, CollectiveKind>, 15> kTable = {{
      {"sparse_all_reduce", CollectiveKind::kAllReduce},
      {"all_reduce", CollectiveKind::kAllReduce},
      {"allreduce", CollectiveKind::kAllReduce},
      {"reduce_scatter", CollectiveKind::kReduceScatter},
      {"all_gather", CollectiveKind::kAllGather},
      {"allgather", CollectiveKind::kAllGather},
      {"all_to_all", CollectiveKind::kAllToAll},
      {"alltoall", CollectiveKind::kAllToAll},
      {"broadcast", CollectiveKind::kBroadcast},
      {"barrier", CollectiveKind::kBarrier},
      {"send", CollectiveKind::kSend},
      {"recv", CollectiveKind::kRecv},
      {"reduce", CollectiveKind::kReduce},
      {"gather", CollectiveKind::kGather},
      {"scatter", CollectiveKind::kScatter},
  }};
  for (const auto& [prefix, kind] : kTable) {
    if (StartsWith(op, prefix)) return kind;
  }
  return CollectiveKind::kUnspecified;
}

}  // namespace

OpClass ClassifyOp(std::string_view name) {
  OpClass c;
  for (std::string_view backend : {"gloo:", "nccl:", "mpi:", "ucc:"}) {
    if (StartsWith(name, backend)) {
      c.collective = CollectiveFromOperation(name.substr(backend.size()));
      c.is_collective = c.collective != CollectiveKind::kUnspecified;
      c.is_point_to_point =
          c.collective == CollectiveKind::kSend || c.collective == CollectiveKind::kRecv;
      return c;
    }
  }
  if (name == "aten::conv2d") c.flop = FlopOp::kConv2d;
  if (name == "aten::convolution") c.flop = FlopOp::kConvolution;
  if (name == "aten::linear") c.flop = FlopOp::kLinear;
  if (name == "aten::addmm") c.flop = FlopOp::kAddmm;
  if (name == "aten::mm") c.flop = FlopOp::kMm;
  if (name == "aten::matmul") c.flop = FlopOp::kMatmul;
  if (name == "aten::bmm") c.flop = FlopOp::kBmm;
  c.opens_backward = StartsWith(name, "autograd::engine::evaluate_function:");
  c.optimizer_step = StartsWith(name, "Optimizer.step#");
  c.excluded_from_phases = c.optimizer_step || StartsWith(name, "Optimizer.zero_grad#") ||
                           StartsWith(name, "profiler::");
  return c;
}

}  // namespace trainscope::pytorch
