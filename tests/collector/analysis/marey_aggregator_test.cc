#include "trainscope/collector/analysis/marey_aggregator.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class MareyAggregatorTest : public ::testing::Test {
 protected:
  OperatorRecord Compute(uint32_t rank, int64_t start, int64_t end, uint64_t flops = 0,
                         uint32_t name = 0) {
    OperatorRecord op;
    op.rank = rank;
    op.step = 1;
    op.start_ns = op.raw_start_ns = start;
    op.end_ns = op.raw_end_ns = end;
    op.name = name == 0 ? matmul_ : name;
    op.op_class = v1::OPERATOR_CLASS_COMPUTE;
    op.flops = flops;
    return op;
  }
  OperatorRecord Comm(uint32_t rank, int64_t start, int64_t end) {
    OperatorRecord op = Compute(rank, start, end, 0, allreduce_);
    op.op_class = v1::OPERATOR_CLASS_COLLECTIVE;
    op.collective_kind = v1::COLLECTIVE_KIND_ALL_REDUCE;
    op.bytes = 1024;
    return op;
  }

  JobStrings strings_;
  const uint32_t matmul_ = strings_.Intern("aten::mm");
  const uint32_t allreduce_ = strings_.Intern("nccl:all_reduce");
  OperatorStore store_;
  MareyAggregator marey_{&store_, &strings_};
};

TEST_F(MareyAggregatorTest, GpuOperatorsKeepTheirStreamAndAreNeverMergedWithHostCompute) {
  const uint32_t gemm = strings_.Intern("sm90_gemm");
  std::vector<OperatorRecord> ops;
  // A dense run of host compute and, interleaved, kernels on stream 7.
  for (int i = 0; i < 40; ++i) {
    ops.push_back(Compute(0, i * 10, i * 10 + 5));
    OperatorRecord kernel = Compute(0, i * 10 + 2, i * 10 + 8, 0, gemm);
    kernel.op_class = v1::OPERATOR_CLASS_GPU_KERNEL;
    kernel.thread = 0;
    kernel.gpu_device = 1;
    kernel.gpu_stream = 7;
    ops.push_back(kernel);
  }
  for (int i = 40; i < 44; ++i) ops.push_back(Compute(0, i * 1000, i * 1000 + 5));  // sparse tail
  store_.Insert(std::move(ops));
  v1::MareyQuery raw;
  const v1::MareyView all = marey_.Build(raw);
  int kernels = 0;
  for (const v1::AlignedOperator& op : all.operators().operators()) {
    if (op.op_class() != v1::OPERATOR_CLASS_GPU_KERNEL) continue;
    ++kernels;
    EXPECT_EQ(op.gpu_device(), 1u);
    EXPECT_EQ(op.gpu_stream(), 7u);
    EXPECT_EQ(all.operators().strings(op.name()), "sm90_gemm");
  }
  EXPECT_EQ(kernels, 40);

  v1::MareyQuery binned;
  binned.set_bins(10);
  const v1::MareyView view = marey_.Build(binned);
  // The dense host compute merged; every kernel still there on its own (a
  // bin has no stream to put merged kernels on).
  ASSERT_FALSE(view.bins().empty());
  uint32_t merged = 0;
  for (const v1::MareyBin& bin : view.bins()) merged += bin.operators();
  EXPECT_EQ(merged, 40u);
  kernels = 0;
  for (const v1::AlignedOperator& op : view.operators().operators()) {
    kernels += op.op_class() == v1::OPERATOR_CLASS_GPU_KERNEL;
  }
  EXPECT_EQ(kernels, 40);
}

TEST_F(MareyAggregatorTest, RawOperatorsUpToTheCap) {
  std::vector<OperatorRecord> ops;
  for (int i = 0; i < 5; ++i) ops.push_back(Compute(0, i * 100, i * 100 + 50));
  store_.Insert(std::move(ops));
  v1::MareyQuery q;
  q.set_max_operators(3);
  const v1::MareyView view = marey_.Build(q);
  EXPECT_EQ(view.operators().operators_size(), 3);
  EXPECT_TRUE(view.truncated());
  EXPECT_EQ(view.start_ns(), 0);
  EXPECT_EQ(view.end_ns(), 450);
  EXPECT_THAT(view.operators().strings(), ElementsAre("aten::mm"));
  EXPECT_THAT(view.bins(), IsEmpty());

  q.set_max_operators(0);
  const v1::MareyView all = marey_.Build(q);
  EXPECT_EQ(all.operators().operators_size(), 5);
  EXPECT_FALSE(all.truncated());
}

TEST_F(MareyAggregatorTest, BinsMergeOnlyDenseComputeAndConserveTotals) {
  std::vector<OperatorRecord> ops;
  for (int i = 0; i < 10; ++i) ops.push_back(Compute(0, i * 10, i * 10 + 5, 10));  // bin 0
  ops.push_back(Comm(0, 50, 95));          // in the dense bin, still individual
  ops.push_back(Compute(0, 500, 550, 7));  // bin 5, sparse
  ops.push_back(Compute(0, 700, 720, 3));  // bin 7, sparse
  ops.push_back(Compute(1, 0, 5, 1));      // rank 1: one op per bin
  ops.push_back(Compute(1, 300, 305, 1));
  store_.Insert(ops);
  v1::MareyQuery q;
  q.set_start_ns(0);
  q.set_end_ns(1000);
  q.set_bins(10);
  const v1::MareyView view = marey_.Build(q);

  ASSERT_EQ(view.bins_size(), 1);
  const v1::MareyBin& bin = view.bins(0);
  EXPECT_EQ(bin.rank(), 0u);
  EXPECT_EQ(bin.operators(), 10u);
  EXPECT_EQ(bin.busy_ns(), 50);
  EXPECT_EQ(bin.flops(), 100u);
  EXPECT_EQ(bin.start_ns(), 0);
  EXPECT_EQ(bin.end_ns(), 95);

  int individual_compute = 0, individual_comm = 0;
  int64_t individual_busy = 0;
  for (const v1::AlignedOperator& op : view.operators().operators()) {
    if (op.op_class() == v1::OPERATOR_CLASS_COMPUTE) {
      ++individual_compute;
      individual_busy += op.end_ns() - op.start_ns();
    } else {
      ++individual_comm;
    }
  }
  EXPECT_EQ(individual_comm, 1);
  // Every compute operator is in a bin or drawn alone; so is its time.
  int total_compute = 0;
  int64_t total_busy = 0;
  uint64_t total_flops = 0;
  for (const OperatorRecord& op : ops) {
    if (!op.is_compute()) continue;
    ++total_compute;
    total_busy += op.end_ns - op.start_ns;
    total_flops += op.flops;
  }
  EXPECT_EQ(static_cast<int>(bin.operators()) + individual_compute, total_compute);
  EXPECT_EQ(bin.busy_ns() + individual_busy, total_busy);
  EXPECT_EQ(bin.flops() + 7 + 3 + 1 + 1, total_flops);
}

TEST_F(MareyAggregatorTest, CommunicationIsNeverMerged) {
  std::vector<OperatorRecord> ops;
  for (int i = 0; i < 20; ++i) ops.push_back(Comm(0, i * 4, i * 4 + 2));
  ops.push_back(Compute(0, 500, 510));
  store_.Insert(ops);
  v1::MareyQuery q;
  q.set_start_ns(0);
  q.set_end_ns(1000);
  q.set_bins(10);
  const v1::MareyView view = marey_.Build(q);
  EXPECT_THAT(view.bins(), IsEmpty());
  EXPECT_EQ(view.operators().operators_size(), 21);
}

TEST_F(MareyAggregatorTest, StageRowsAggregateTheSameOperatorAcrossDevices) {
  const uint32_t a = strings_.Intern("a");
  const uint32_t b = strings_.Intern("b");
  std::vector<OperatorRecord> ops;
  for (uint32_t r = 0; r < 4; ++r) {
    const int64_t d = r;
    for (OperatorRecord op :
         {Compute(r, 100 + d * 10, 200 + d * 10, 0, a), Compute(r, 300 + d, 400 + d, 0, b),
          Compute(r, 500 + d * 20, 600 + d * 20, 0, a)}) {
      op.stage = r / 2;
      ops.push_back(op);
    }
  }
  store_.Insert(ops);
  v1::MareyQuery q;
  q.set_grouping(v1::MAREY_GROUPING_STAGE);
  const v1::MareyView view = marey_.Build(q);
  EXPECT_THAT(view.operators().operators(), IsEmpty());
  ASSERT_EQ(view.rows_size(), 2);
  const v1::MareyRow& s0 = view.rows(0);
  const v1::MareyRow& s1 = view.rows(1);
  EXPECT_EQ(s0.key(), "stage 0");
  EXPECT_THAT(s0.ranks(), ElementsAre(0u, 1u));
  EXPECT_EQ(s1.key(), "stage 1");
  EXPECT_THAT(s1.ranks(), ElementsAre(2u, 3u));
  ASSERT_EQ(s0.operators_size(), 3);
  const auto name_of = [&](const v1::AggregatedOperator& op) {
    return view.operators().strings(static_cast<int>(op.name()));
  };
  // First "a": ranks 0 and 1 start at 100 and 110.
  const v1::AggregatedOperator& first = s0.operators(0);
  EXPECT_EQ(name_of(first), "a");
  EXPECT_EQ(first.devices(), 2u);
  EXPECT_EQ(first.min_start_ns(), 100);
  EXPECT_EQ(first.avg_start_ns(), 105);
  EXPECT_EQ(first.max_start_ns(), 110);
  EXPECT_EQ(first.min_end_ns(), 200);
  EXPECT_EQ(first.avg_end_ns(), 205);
  EXPECT_EQ(first.max_end_ns(), 210);
  EXPECT_EQ(name_of(s0.operators(1)), "b");
  // Second "a" matched by occurrence, not merged with the first.
  const v1::AggregatedOperator& second = s0.operators(2);
  EXPECT_EQ(name_of(second), "a");
  EXPECT_EQ(second.min_start_ns(), 500);
  EXPECT_EQ(second.avg_start_ns(), 510);
  EXPECT_EQ(second.max_start_ns(), 520);
  // Stage 1: ranks 2 and 3.
  EXPECT_EQ(s1.operators(0).min_start_ns(), 120);
  EXPECT_EQ(s1.operators(0).max_start_ns(), 130);
  EXPECT_EQ(s1.operators(2).avg_start_ns(), 550);
}

TEST_F(MareyAggregatorTest, HostRowsFollowTheCallersMap) {
  std::vector<OperatorRecord> ops;
  for (uint32_t r = 0; r < 4; ++r) ops.push_back(Compute(r, 100 + r, 200 + r));
  store_.Insert(ops);
  v1::MareyQuery q;
  q.set_grouping(v1::MAREY_GROUPING_HOST);
  const v1::MareyView view = marey_.Build(q, {{0, "n0"}, {1, "n0"}, {2, "n1"}});
  ASSERT_EQ(view.rows_size(), 3);
  EXPECT_EQ(view.rows(0).key(), "host n0");
  EXPECT_THAT(view.rows(0).ranks(), ElementsAre(0u, 1u));
  EXPECT_EQ(view.rows(0).operators(0).devices(), 2u);
  EXPECT_EQ(view.rows(1).key(), "host n1");
  EXPECT_EQ(view.rows(2).key(), "host unknown");
  EXPECT_THAT(view.rows(2).ranks(), ElementsAre(3u));
}

TEST_F(MareyAggregatorTest, RangeAndRankFilterApply) {
  store_.Insert({Compute(0, 0, 10), Compute(0, 500, 510), Compute(1, 500, 510)});
  v1::MareyQuery q;
  q.set_start_ns(400);
  q.set_end_ns(600);
  q.add_ranks(1);
  const v1::MareyView view = marey_.Build(q);
  ASSERT_EQ(view.operators().operators_size(), 1);
  EXPECT_EQ(view.operators().operators(0).rank(), 1u);
  EXPECT_EQ(view.start_ns(), 400);
  EXPECT_EQ(view.end_ns(), 600);
}

}  // namespace
}  // namespace trainscope::collector
