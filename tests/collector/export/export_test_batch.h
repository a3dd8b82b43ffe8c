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

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_TESTS_COLLECTOR_EXPORT_EXPORT_TEST_BATCH_H_
