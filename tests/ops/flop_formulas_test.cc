#include "trainscope/ops/flop_formulas.h"

#include <vector>

#include "gtest/gtest.h"

namespace trainscope::ops {
namespace {

using Shape = std::vector<int64_t>;

TEST(FlopFormulasTest, MatrixProductsCountTwoFlopsPerMultiplyAccumulate) {
  const Shape a{64, 256}, b{256, 10};
  EXPECT_EQ(MmFlops(a, b), 2u * 64 * 256 * 10);
  const Shape a3{4, 8, 16}, b3{4, 16, 2};
  EXPECT_EQ(BmmFlops(a3, b3), 2u * 4 * 8 * 16 * 2);
  // matmul broadcasts batch dims: [3,1,8,16] x [5,16,2] -> 15 products.
  const Shape ma{3, 1, 8, 16}, mb{5, 16, 2};
  EXPECT_EQ(MatmulFlops(ma, mb), 2u * 15 * 8 * 16 * 2);
  const Shape x{32, 7, 100}, w{50, 100};
  EXPECT_EQ(LinearFlops(x, w), 2u * 32 * 7 * 100 * 50);
  // Shapes that do not fit give 0, not a guess.
  const Shape bad{255, 10};
  EXPECT_EQ(MmFlops(a, bad), 0u);
}

TEST(FlopFormulasTest, ConvolutionCountsEachOutputsMultiplyAccumulates) {
  // ResNet's first layer: 3->64 channels, 7x7, stride 2, padding 3, 224 -> 112.
  const Shape input{8, 3, 224, 224}, weight{64, 3, 7, 7};
  const std::vector<int64_t> stride{2, 2}, padding{3, 3}, dilation{1, 1};
  ConvGeometry g;
  g.stride = stride;
  g.padding = padding;
  g.dilation = dilation;
  EXPECT_EQ(ConvolutionFlops(input, weight, g), 2u * 8 * 64 * 112 * 112 * 3 * 7 * 7);
}

// Kineto's "Input Dims" of real trace_diff operators.
TEST(FlopFormulasTest, FlopsFromInputShapesReadsAProfilersShapes) {
  EXPECT_EQ(FlopsFromInputShapes("aten::mm", {{98304, 50}, {50, 15}}), 2u * 98304 * 50 * 15);
  // addmm's first input is the bias.
  EXPECT_EQ(FlopsFromInputShapes("aten::addmm", {{512}, {1024, 1705}, {1705, 512}, {}, {}}),
            2u * 1024 * 1705 * 512);
  EXPECT_EQ(FlopsFromInputShapes("aten::linear", {{1024, 1705}, {512, 1705}, {512}}),
            2u * 1024 * 1705 * 512);
  EXPECT_EQ(FlopsFromInputShapes("aten::matmul", {{1024, 96, 50}, {50, 15}}),
            2u * 1024 * 96 * 50 * 15);
  EXPECT_EQ(FlopsFromInputShapes("aten::relu", {{1024, 512}}), 0u);
  EXPECT_EQ(FlopsFromInputShapes("aten::mm", {{4, 5}}), 0u);  // a missing input
}

}  // namespace
}  // namespace trainscope::ops
