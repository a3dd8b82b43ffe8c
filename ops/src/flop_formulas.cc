#include "trainscope/ops/flop_formulas.h"

#include <algorithm>
#include <array>

namespace trainscope::ops {
namespace {

int64_t At(Dims dims, size_t i, int64_t fallback) {
  if (dims.empty()) return fallback;
  return i < dims.size() ? dims[i] : dims.back();  // a single value applies to every dim
}

uint64_t Product(Dims dims) {
  uint64_t p = 1;
  for (int64_t d : dims) p *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return p;
}

}  // namespace

uint64_t MmFlops(Dims a, Dims b) {
  if (a.size() != 2 || b.size() != 2 || a[1] != b[0]) return 0;
  return 2 * Product(a) * static_cast<uint64_t>(b[1]);
}

uint64_t AddmmFlops(Dims mat1, Dims mat2) { return MmFlops(mat1, mat2); }

uint64_t BmmFlops(Dims a, Dims b) {
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1]) return 0;
  return 2 * Product(a) * static_cast<uint64_t>(b[2]);
}

uint64_t MatmulFlops(Dims a, Dims b) {
  if (a.empty() || b.empty()) return 0;
  // A 1-D operand is a row (left) or a column (right) vector.
  const int64_t n = a.size() >= 2 ? a[a.size() - 2] : 1;
  const int64_t k = a.back();
  const int64_t kb = b.size() >= 2 ? b[b.size() - 2] : b[0];
  const int64_t m = b.size() >= 2 ? b.back() : 1;
  if (k != kb) return 0;
  // Batch dims broadcast against each other, aligned from the right.
  const Dims a_batch = a.size() > 2 ? a.first(a.size() - 2) : Dims{};
  const Dims b_batch = b.size() > 2 ? b.first(b.size() - 2) : Dims{};
  uint64_t batch = 1;
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < a_batch.size() ? a_batch[a_batch.size() - 1 - i] : 1;
    const int64_t db = i < b_batch.size() ? b_batch[b_batch.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return 0;
    batch *= static_cast<uint64_t>(std::max(da, db));
  }
  return 2 * batch * static_cast<uint64_t>(n) * static_cast<uint64_t>(k) * static_cast<uint64_t>(m);
}

uint64_t LinearFlops(Dims input, Dims weight) {
  if (input.empty() || weight.size() != 2 || input.back() != weight[1]) return 0;
  return 2 * Product(input) * static_cast<uint64_t>(weight[0]);
}

uint64_t ConvolutionFlops(Dims input, Dims weight, const ConvGeometry& g) {
  if (weight.size() < 3 || g.groups < 1) return 0;
  const size_t spatial = weight.size() - 2;
  // Batched [N, C, *spatial] or unbatched [C, *spatial].
  int64_t batch = 1;
  Dims in = input;
  if (input.size() == spatial + 2) {
    batch = input[0];
    in = input.subspan(1);
  } else if (input.size() != spatial + 1) {
    return 0;
  }
  const int64_t in_channels = in[0];
  const Dims in_spatial = in.subspan(1);
  const Dims kernel = weight.subspan(2);
  const uint64_t kernel_volume = Product(kernel);
  if (g.transposed) {
    // Every input element scatters into (out_channels / groups) * kernel outputs.
    const int64_t out_per_group = weight[1];
    return 2 * static_cast<uint64_t>(batch) * static_cast<uint64_t>(in_channels) *
           Product(in_spatial) * static_cast<uint64_t>(out_per_group) * kernel_volume;
  }
  const int64_t out_channels = weight[0];
  const int64_t in_per_group = weight[1];
  if (in_per_group * g.groups != in_channels) return 0;
  uint64_t out_volume = 1;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t size = in_spatial[i];
    const int64_t stride = At(g.stride, i, 1);
    int64_t out;
    if (g.padding_same) {
      out = (size + stride - 1) / std::max<int64_t>(stride, 1);
    } else {
      const int64_t pad = At(g.padding, i, 0);
      const int64_t dil = At(g.dilation, i, 1);
      if (stride < 1) return 0;
      out = (size + 2 * pad - dil * (kernel[i] - 1) - 1) / stride + 1;
    }
    if (out <= 0) return 0;
    out_volume *= static_cast<uint64_t>(out);
  }
  return 2 * static_cast<uint64_t>(batch) * static_cast<uint64_t>(out_channels) * out_volume *
         static_cast<uint64_t>(in_per_group) * kernel_volume;
}

uint64_t FlopsFromInputShapes(std::string_view name,
                              const std::vector<std::vector<int64_t>>& inputs) {
  const auto input = [&](size_t i) { return i < inputs.size() ? Dims(inputs[i]) : Dims{}; };
  if (name == "aten::mm") return MmFlops(input(0), input(1));
  if (name == "aten::addmm") return AddmmFlops(input(1), input(2));  // (bias, mat1, mat2, ...)
  if (name == "aten::bmm") return BmmFlops(input(0), input(1));
  if (name == "aten::matmul") return MatmulFlops(input(0), input(1));
  if (name == "aten::linear") return LinearFlops(input(0), input(1));
  return 0;
}

}  // namespace trainscope::ops
