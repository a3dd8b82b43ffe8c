// FLOPs of the matrix and convolution operators from their input shapes:
// one copy for the plugin (live, from the operator's inputs) and the
// importer (from a Kineto trace's "Input Dims").
//
// Usage:
//   uint64_t f = MmFlops({{64, 256}}, {{256, 10}});   // 2*64*256*10
//
// Convention: 2 FLOPs per multiply-accumulate; bias additions and other
// element-wise work are not counted (the usual "2 x MACs"). A shape that
// does not fit the operator gives 0 rather than a guess.
//
// Threading: pure functions.
#ifndef TRAINSCOPE_OPS_FLOP_FORMULAS_H_
#define TRAINSCOPE_OPS_FLOP_FORMULAS_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace trainscope::ops {

using Dims = std::span<const int64_t>;

uint64_t MmFlops(Dims a, Dims b);               // [n,k] x [k,m]
uint64_t AddmmFlops(Dims mat1, Dims mat2);      // the product part of addmm
uint64_t BmmFlops(Dims a, Dims b);              // [B,n,k] x [B,k,m]
uint64_t MatmulFlops(Dims a, Dims b);           // torch.matmul's broadcasting rules
uint64_t LinearFlops(Dims input, Dims weight);  // input [..., in], weight [out, in]

struct ConvGeometry {
  Dims stride;
  Dims padding;  // empty: 0
  Dims dilation;
  bool transposed = false;
  Dims output_padding;
  int64_t groups = 1;
  // conv2d's padding="same" (output size = ceil(input / stride)).
  bool padding_same = false;
};

// input [N, C, *spatial] or unbatched [C, *spatial]; weight [O, C/groups, *kernel]
// ([C, O/groups, *kernel] when transposed).
uint64_t ConvolutionFlops(Dims input, Dims weight, const ConvGeometry& geometry);

// FLOPs of the ATen operator `name` ("aten::mm", "aten::addmm", "aten::bmm",
// "aten::matmul", "aten::linear") from the shapes of its inputs as a profiler
// records them (Kineto's "Input Dims": one list per input, [] for a scalar);
// 0 for any other operator or shapes that do not fit. Convolutions are not
// judged here: their stride and padding are not among the shapes.
uint64_t FlopsFromInputShapes(std::string_view name,
                              const std::vector<std::vector<int64_t>>& inputs);

}  // namespace trainscope::ops

#endif  // TRAINSCOPE_OPS_FLOP_FORMULAS_H_
