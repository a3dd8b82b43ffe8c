#include "trainscope/viewer/units.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(UnitsTest, Durations) {
  EXPECT_EQ(FormatDuration(850), "850 ns");
  EXPECT_EQ(FormatDuration(1'250'000), "1.25 ms");
  EXPECT_EQ(FormatDuration(12'500), "12.5 \xC2\xB5s");
  EXPECT_EQ(FormatDuration(3.2e9), "3.20 s");
  EXPECT_EQ(FormatOffset(2e6), "+2.00 ms");
}

TEST(UnitsTest, BytesAndFlops) {
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatFlops(2.5e12, true), "2.50 TFLOP/s");
}

TEST(UnitsTest, NiceTicksAreRoundAndInside) {
  auto ticks = NiceTicks(0, 3.7e6, 6);
  ASSERT_FALSE(ticks.empty());
  EXPECT_EQ(ticks.front(), 0);
  for (double t : ticks) {
    EXPECT_LE(t, 3.7e6);
    EXPECT_GE(t, 0);
  }
  EXPECT_LE(ticks.size(), 7u);
  EXPECT_DOUBLE_EQ(ticks[1] - ticks[0], 1e6);
  EXPECT_TRUE(NiceTicks(5, 5, 4).empty());
}

TEST(UnitsTest, ShortKernelNameDropsReturnTypeTemplatesAndParameters) {
  EXPECT_EQ(ShortKernelName("void at::native::vectorized_elementwise_kernel<4, "
                            "at::native::CUDAFunctor_add<float> >(int, float*)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(ShortKernelName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)"),
            "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(ShortKernelName("sm90_xmma_gemm_f32f32_tf32f32"), "sm90_xmma_gemm_f32f32_tf32f32");
  EXPECT_EQ(ShortKernelName("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, "
                            "unsigned int, 1, 128, 1>(float*, int)"),
            "at::native::CatArrayBatchedCopy");
  EXPECT_EQ(ShortKernelName("Memcpy HtoD (Pinned -> Device)"), "Memcpy HtoD (Pinned -> Device)");
}

}  // namespace
}  // namespace trainscope::viewer
