#include "trainscope/collector/analysis/operator_batch_builder.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

TEST(OperatorRecordTest, GpuClassesByEventKind) {
  EXPECT_EQ(OperatorRecord::GpuClassOf(v1::EVENT_KIND_GPU_KERNEL), v1::OPERATOR_CLASS_GPU_KERNEL);
  EXPECT_EQ(OperatorRecord::GpuClassOf(v1::EVENT_KIND_GPU_COLLECTIVE),
            v1::OPERATOR_CLASS_GPU_COLLECTIVE);
  EXPECT_EQ(OperatorRecord::GpuClassOf(v1::EVENT_KIND_GPU_MEMCPY), v1::OPERATOR_CLASS_GPU_COPY);
  EXPECT_EQ(OperatorRecord::GpuClassOf(v1::EVENT_KIND_GPU_MEMSET), v1::OPERATOR_CLASS_GPU_COPY);
  EXPECT_EQ(OperatorRecord::GpuClassOf(v1::EVENT_KIND_GPU_RUNTIME),
            v1::OPERATOR_CLASS_UNSPECIFIED);  // a CPU call, not device work
  OperatorRecord op;
  op.op_class = v1::OPERATOR_CLASS_GPU_KERNEL;
  EXPECT_TRUE(op.is_gpu());
  EXPECT_FALSE(op.is_compute());  // density bins merge CPU compute only
  EXPECT_FALSE(op.is_communication());
  op.op_class = v1::OPERATOR_CLASS_GPU_COLLECTIVE;
  EXPECT_TRUE(op.is_communication());
  op.op_class = v1::OPERATOR_CLASS_GPU_COPY;
  EXPECT_FALSE(op.is_communication());
  op.op_class = v1::OPERATOR_CLASS_SEND;
  EXPECT_FALSE(op.is_gpu());
}

TEST(OperatorBatchBuilderTest, GpuOperatorsKeepDeviceStreamAndLaunch) {
  JobStrings strings;
  const uint32_t kernel = strings.Intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  const uint32_t launcher = strings.Intern("record_param_comms");
  const uint32_t group = strings.Intern("0");
  v1::OperatorBatch batch;
  OperatorBatchBuilder builder(&strings, &batch);
  OperatorRecord op;
  op.rank = 3;
  op.name = kernel;
  op.op_class = v1::OPERATOR_CLASS_GPU_COLLECTIVE;
  op.thread = 0;
  op.gpu_device = 2;
  op.gpu_stream = 20;
  op.correlation = 1234;
  op.launch_op = launcher;
  op.group = group;
  op.group_sequence = 7;
  op.bytes = 1 << 20;
  builder.Add(op);
  OperatorRecord copy = op;
  copy.op_class = v1::OPERATOR_CLASS_GPU_COPY;
  copy.gpu_stream = 9;
  copy.launch_op = 0;
  builder.Add(copy);

  ASSERT_EQ(batch.operators_size(), 2);
  const v1::AlignedOperator& out = batch.operators(0);
  EXPECT_EQ(out.op_class(), v1::OPERATOR_CLASS_GPU_COLLECTIVE);
  EXPECT_EQ(out.thread(), 0u);
  EXPECT_EQ(out.gpu_device(), 2u);
  EXPECT_EQ(out.gpu_stream(), 20u);
  EXPECT_EQ(out.correlation(), 1234u);
  EXPECT_EQ(batch.strings(out.name()), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(batch.strings(out.launch_op()), "record_param_comms");
  EXPECT_EQ(batch.strings(out.group()), "0");
  EXPECT_EQ(out.group_sequence(), 7u);
  EXPECT_EQ(out.bytes(), 1u << 20);
  const v1::AlignedOperator& second = batch.operators(1);
  EXPECT_EQ(second.op_class(), v1::OPERATOR_CLASS_GPU_COPY);
  EXPECT_EQ(second.gpu_stream(), 9u);
  EXPECT_EQ(second.launch_op(), 0u);  // unknown launch: no string
  EXPECT_EQ(second.peer(), -1);
}

}  // namespace
}  // namespace trainscope::collector
