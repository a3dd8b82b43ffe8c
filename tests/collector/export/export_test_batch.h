// A small job of aligned operators for the export tests: two ranks, a
// compute operator nested in another, one all-reduce instance and one
// send/recv pair.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_EXPORT_EXPORT_TEST_BATCH_H_
#define TRAINSCOPE_TESTS_COLLECTOR_EXPORT_EXPORT_TEST_BATCH_H_

#include <string>

#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

inline v1::OperatorBatch ExportTestBatch() {
  v1::OperatorBatch batch;
  batch.add_strings("");                // 0
  batch.add_strings("aten::\"conv\"");  // 1: a name that needs escaping
  batch.add_strings("aten::add");       // 2
  batch.add_strings("all_reduce");      // 3
  batch.add_strings("pg:default");      // 4
  batch.add_strings("send");            // 5
  batch.add_strings("recv");            // 6
  const int64_t t0 = 1'795'000'000'000'000'000;
  auto add = [&](uint32_t rank, int64_t start, int64_t end, uint32_t name, v1::OperatorClass cls,
                 uint64_t seq = 0, int32_t peer = -1) {
    v1::AlignedOperator* op = batch.add_operators();
    op->set_rank(rank);
    op->set_thread(7);
    op->set_start_ns(t0 + start);
    op->set_end_ns(t0 + end);
    op->set_name(name);
    op->set_op_class(cls);
    op->set_step(3);
    if (cls != v1::OPERATOR_CLASS_COMPUTE) {
      op->set_group(4);
      op->set_group_sequence(seq);
      op->set_peer(peer);
      op->set_bytes(4096);
    }
  };
  add(0, 1'000, 9'000, 1, v1::OPERATOR_CLASS_COMPUTE);
  add(0, 2'000, 3'500, 2, v1::OPERATOR_CLASS_COMPUTE);  // inside the conv
  add(1, 1'200, 8'000, 1, v1::OPERATOR_CLASS_COMPUTE);
  add(0, 10'000, 12'000, 3, v1::OPERATOR_CLASS_COLLECTIVE, 1);
  add(1, 10'500, 12'001, 3, v1::OPERATOR_CLASS_COLLECTIVE, 1);
  add(0, 13'000, 13'500, 5, v1::OPERATOR_CLASS_SEND, 2, 1);
  add(1, 13'100, 13'700, 6, v1::OPERATOR_CLASS_RECV, 2, 0);
  return batch;
}

// Two ranks' GPU work: rank 0's GPU 0 runs a kernel on stream 7 and an NCCL
// kernel on stream 20, rank 1's GPU 1 a kernel and an overlapping NCCL
// kernel of the same collective on streams 7 and 24, plus a memcpy and a
// memset on stream 9; and one host operator on rank 0.
inline v1::OperatorBatch ExportGpuTestBatch() {
  v1::OperatorBatch batch;
  batch.add_strings("");                                 // 0
  batch.add_strings("sm90_xmma_gemm");                   // 1
  batch.add_strings("ncclDevKernel_AllReduce_Sum_f32");  // 2
  batch.add_strings("Memcpy HtoD (Pinned -> Device)");   // 3
  batch.add_strings("Memset (Device)");                  // 4
  batch.add_strings("0");                                // 5: the process group
  batch.add_strings("aten::mm");                         // 6
  const int64_t t0 = 1'795'000'000'000'000'000;
  auto add = [&](uint32_t rank, uint32_t device, uint32_t stream, int64_t start, int64_t end,
                 uint32_t name, v1::OperatorClass cls) {
    v1::AlignedOperator* op = batch.add_operators();
    op->set_rank(rank);
    op->set_start_ns(t0 + start);
    op->set_end_ns(t0 + end);
    op->set_name(name);
    op->set_op_class(cls);
    op->set_step(2);
    op->set_gpu_device(device);
    op->set_gpu_stream(stream);
    op->set_correlation(100 + batch.operators_size());
    op->set_launch_op(6);
    op->set_peer(-1);
    if (cls == v1::OPERATOR_CLASS_GPU_COLLECTIVE) {
      op->set_group(5);
      op->set_group_sequence(4);
      op->set_bytes(1 << 20);
    }
    return op;
  };
  v1::AlignedOperator* host = add(0, 0, 0, 0, 3'000, 6, v1::OPERATOR_CLASS_COMPUTE);
  host->set_thread(11);
  host->set_gpu_stream(0);
  host->set_correlation(0);
  host->set_launch_op(0);
  add(0, 0, 7, 1'000, 5'000, 1, v1::OPERATOR_CLASS_GPU_KERNEL);
  add(0, 0, 20, 4'000, 9'000, 2, v1::OPERATOR_CLASS_GPU_COLLECTIVE);  // overlaps the kernel
  add(1, 1, 7, 1'100, 5'200, 1, v1::OPERATOR_CLASS_GPU_KERNEL);
  add(1, 1, 24, 4'500, 9'000, 2, v1::OPERATOR_CLASS_GPU_COLLECTIVE);
  add(1, 1, 9, 200, 700, 3, v1::OPERATOR_CLASS_GPU_COPY);
  add(1, 1, 9, 800, 900, 4, v1::OPERATOR_CLASS_GPU_COPY);
  return batch;
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_TESTS_COLLECTOR_EXPORT_EXPORT_TEST_BATCH_H_
