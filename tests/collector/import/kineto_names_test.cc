#include "trainscope/collector/import/kineto_names.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TEST(KinetoNamesTest, CategoriesSortDeviceWorkLaunchesAndSkippedRecords) {
  EXPECT_EQ(CategoryOf("kernel"), KinetoCategory::kKernel);
  EXPECT_EQ(CategoryOf("gpu_memcpy"), KinetoCategory::kMemcpy);
  EXPECT_EQ(CategoryOf("gpu_memset"), KinetoCategory::kMemset);
  EXPECT_EQ(CategoryOf("cuda_runtime"), KinetoCategory::kRuntime);
  EXPECT_EQ(CategoryOf("cuda_driver"), KinetoCategory::kRuntime);
  EXPECT_EQ(CategoryOf("hip_runtime"), KinetoCategory::kRuntime);
  EXPECT_EQ(CategoryOf("gpu_user_annotation"), KinetoCategory::kGpuAnnotation);
  EXPECT_EQ(CategoryOf("cuda_sync"), KinetoCategory::kGpuSync);
  EXPECT_EQ(CategoryOf("Trace"), KinetoCategory::kProfilerSpan);
  EXPECT_EQ(CategoryOf("cpu_op"), KinetoCategory::kCpu);
  EXPECT_EQ(CategoryOf(""), KinetoCategory::kCpu);  // the legacy profiler has no cat
}

TEST(KinetoNamesTest, NcclKernelsAndTheirCollectives) {
  EXPECT_TRUE(IsNcclKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)"));
  EXPECT_TRUE(IsNcclKernelName("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"));
  EXPECT_TRUE(IsNcclKernelName("void rcclKernel_AllReduce(...)"));
  EXPECT_FALSE(IsNcclKernelName("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_FALSE(IsNcclKernelName("nccl:all_reduce"));  // the c10d range, not a kernel
  EXPECT_EQ(CollectiveKindOf("ncclKernel_AllReduce_RING_LL_Sum_float"),
            v1::COLLECTIVE_KIND_ALL_REDUCE);
  EXPECT_EQ(CollectiveKindOf("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
            v1::COLLECTIVE_KIND_REDUCE_SCATTER);
  EXPECT_EQ(CollectiveKindOf("ncclKernel_AllGather_RING"), v1::COLLECTIVE_KIND_ALL_GATHER);
  EXPECT_EQ(CollectiveKindOf("ncclKernel_Broadcast_RING_LL_Sum_int8_t"),
            v1::COLLECTIVE_KIND_BROADCAST);
  EXPECT_EQ(CollectiveKindOf("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),
            v1::COLLECTIVE_KIND_UNSPECIFIED);
  EXPECT_EQ(CollectiveKindOf("nccl:_reduce_scatter_base"), v1::COLLECTIVE_KIND_REDUCE_SCATTER);
  EXPECT_EQ(CollectiveKindOf("nccl:all_to_all"), v1::COLLECTIVE_KIND_ALL_TO_ALL);
  EXPECT_EQ(CollectiveKindOf("allreduce"), v1::COLLECTIVE_KIND_ALL_REDUCE);
  EXPECT_EQ(CollectiveKindOf("wait"), v1::COLLECTIVE_KIND_UNSPECIFIED);
}

TEST(KinetoNamesTest, CopiesRuntimeCallsAndDtypes) {
  EXPECT_EQ(CopyKindOf("Memcpy HtoD (Pageable -> Device)"), v1::COPY_KIND_HOST_TO_DEVICE);
  EXPECT_EQ(CopyKindOf("Memcpy DtoH (Device -> Pinned)"), v1::COPY_KIND_DEVICE_TO_HOST);
  EXPECT_EQ(CopyKindOf("Memcpy DtoD (Device -> Device)"), v1::COPY_KIND_DEVICE_TO_DEVICE);
  EXPECT_EQ(CopyKindOf("Memcpy PtoP (Device -> Device)"), v1::COPY_KIND_PEER_TO_PEER);
  EXPECT_EQ(CopyKindOf("Memcpy"), v1::COPY_KIND_UNSPECIFIED);
  EXPECT_EQ(RuntimeCallOf("cudaLaunchKernel"), v1::RUNTIME_CALL_LAUNCH);
  EXPECT_EQ(RuntimeCallOf("cudaLaunchKernelExC"), v1::RUNTIME_CALL_LAUNCH);
  EXPECT_EQ(RuntimeCallOf("cuLaunchKernel"), v1::RUNTIME_CALL_LAUNCH);
  EXPECT_EQ(RuntimeCallOf("cudaGraphLaunch"), v1::RUNTIME_CALL_LAUNCH);
  EXPECT_EQ(RuntimeCallOf("hipExtModuleLaunchKernel"), v1::RUNTIME_CALL_LAUNCH);
  EXPECT_EQ(RuntimeCallOf("cudaMemcpyAsync"), v1::RUNTIME_CALL_COPY);
  EXPECT_EQ(RuntimeCallOf("hipMemcpyWithStream"), v1::RUNTIME_CALL_COPY);
  EXPECT_EQ(RuntimeCallOf("cudaMemsetAsync"), v1::RUNTIME_CALL_COPY);
  EXPECT_EQ(RuntimeCallOf("cudaStreamSynchronize"), v1::RUNTIME_CALL_SYNC);
  EXPECT_EQ(RuntimeCallOf("cudaDeviceSynchronize"), v1::RUNTIME_CALL_SYNC);
  EXPECT_EQ(RuntimeCallOf("cudaEventQuery"), v1::RUNTIME_CALL_OTHER);
  EXPECT_EQ(DtypeBytes("Float"), 4u);
  EXPECT_EQ(DtypeBytes("BFloat16"), 2u);
  EXPECT_EQ(DtypeBytes("c10::Half"), 2u);
  EXPECT_EQ(DtypeBytes("Long"), 8u);
  EXPECT_EQ(DtypeBytes("Byte"), 1u);
  EXPECT_EQ(DtypeBytes("Quantum"), 0u);
}

}  // namespace
}  // namespace trainscope::collector
