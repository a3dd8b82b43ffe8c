// GPU events through the agent's encoder come back unchanged from the
// agent's decoder and pass the collector's BatchValidator.
#include <vector>

#include "batch_encoder.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/event_batch_decoder.h"
#include "trainscope/collector/ingest/batch_validator.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::agent {
namespace {

GpuEventRecord Gpu(EventKind kind, StringId name, int64_t start, int64_t end, uint32_t stream,
                   uint64_t correlation, int64_t launch_delta, StringId op) {
  GpuEventRecord r;
  r.event.kind = kind;
  r.event.name = name;
  r.event.start_ns = start;
  r.event.end_ns = end;
  r.device = 1;
  r.stream = stream;
  r.correlation = correlation;
  r.launch_delta_ns = launch_delta;
  r.launch_op = op;
  return r;
}

TEST(GpuEventEncodingTest, EveryGpuKindRoundTripsAndPassesTheCollectorsValidator) {
  StringTable table(512, 1000);
  const StringId mm = table.Intern("aten::mm");
  const StringId gemm = table.Intern("sm90_gemm");
  const StringId launch = table.Intern("cudaLaunchKernel");
  const StringId nccl = table.Intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  const StringId pg = table.Intern("default_pg");

  BatchEncoder encoder;
  EventRecord op;
  op.kind = EventKind::kOperator;
  op.name = mm;
  op.start_ns = 1000;
  op.end_ns = 2000;
  op.value = 7;
  encoder.Add(op, 11);

  GpuEventRecord call = Gpu(EventKind::kGpuRuntime, launch, 1100, 1150, 0, 0, 0, 0);
  call.event.value = 42;
  call.event.detail = static_cast<uint16_t>(RuntimeCall::kLaunch);
  call.thread = 11;
  encoder.AddGpu(call);
  encoder.AddGpu(Gpu(EventKind::kGpuKernel, gemm, 1300, 1900, 7, 42, -200, mm));
  GpuEventRecord copy = Gpu(EventKind::kGpuMemcpy, kEmptyString, 1950, 2050, 7, 43, -600, mm);
  copy.event.value = 1 << 20;
  copy.event.detail = static_cast<uint16_t>(CopyKind::kDeviceToHost);
  encoder.AddGpu(copy);
  GpuEventRecord set = Gpu(EventKind::kGpuMemset, kEmptyString, 2100, 2110, 7, 0, -5, mm);
  set.event.value = 4096;
  encoder.AddGpu(set);  // correlation 0: the launch fields are not written
  GpuEventRecord collective = Gpu(EventKind::kGpuCollective, nccl, 2200, 3200, 13, 44, -100, mm);
  collective.event.value = 8 << 20;
  collective.event.detail = static_cast<uint16_t>(CollectiveKind::kAllReduce);
  collective.event.group = pg;
  collective.event.aux = 5;
  collective.event.peer = -1;
  encoder.AddGpu(collective);
  // A launch that seems to come after the work started (clocks a little
  // apart) is written as a launch at the start, as the protocol requires.
  encoder.AddGpu(Gpu(EventKind::kGpuKernel, gemm, 3300, 3400, 13, 45, 30, mm));

  const v1::EventBatch batch = encoder.Finish(table, v1::DropCounters());
  EXPECT_EQ(protocol::CountGpuEvents(batch), 5);
  EXPECT_EQ(batch.gpu_device_size(), 5);
  EXPECT_EQ(batch.group_size(), 1);  // only the collective has collective columns

  auto decoded = DecodeEventBatch(batch);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), 7u);
  const std::vector<DecodedEvent>& e = *decoded;
  EXPECT_EQ(e[0].kind, EventKind::kOperator);
  EXPECT_EQ(e[1].kind, EventKind::kGpuRuntime);
  EXPECT_EQ(e[1].thread, 11u);
  EXPECT_EQ(e[1].value, 42u);
  EXPECT_EQ(e[1].name, "cudaLaunchKernel");
  EXPECT_EQ(e[1].detail, static_cast<uint32_t>(RuntimeCall::kLaunch));

  EXPECT_EQ(e[2].kind, EventKind::kGpuKernel);
  EXPECT_EQ(e[2].name, "sm90_gemm");
  EXPECT_EQ(e[2].thread, 0u);
  EXPECT_EQ(e[2].gpu_device, 1u);
  EXPECT_EQ(e[2].gpu_stream, 7u);
  EXPECT_EQ(e[2].correlation, 42u);
  EXPECT_EQ(e[2].start_ns, 1300);
  EXPECT_EQ(e[2].end_ns, 1900);
  EXPECT_EQ(e[2].launch_ns, 1100);
  EXPECT_EQ(e[2].launch_op, "aten::mm");

  EXPECT_EQ(e[3].kind, EventKind::kGpuMemcpy);
  EXPECT_EQ(e[3].value, 1u << 20);
  EXPECT_EQ(e[3].detail, static_cast<uint32_t>(CopyKind::kDeviceToHost));
  EXPECT_EQ(e[3].launch_ns, 1350);

  EXPECT_EQ(e[4].kind, EventKind::kGpuMemset);
  EXPECT_EQ(e[4].correlation, 0u);
  EXPECT_EQ(e[4].launch_op, "");

  EXPECT_EQ(e[5].kind, EventKind::kGpuCollective);
  EXPECT_EQ(e[5].group, "default_pg");
  EXPECT_EQ(e[5].group_sequence, 5u);
  EXPECT_EQ(e[5].peer, -1);
  EXPECT_EQ(e[5].value, 8u << 20);
  EXPECT_EQ(e[5].gpu_stream, 13u);

  EXPECT_EQ(e[6].launch_ns, e[6].start_ns);  // clamped to 0 delta

  collector::BatchValidator validator(/*world_size=*/1);
  v1::EventBatch sent = batch;
  sent.set_sequence(1);
  EXPECT_TRUE(validator.Validate(sent).ok()) << validator.Validate(sent);

  // The next batch: the runtime call of a later kernel arrives after the
  // thread's operator already went (the tracer's buffers lag), which the
  // collector accepts; the stream's own order still holds.
  encoder.Add(op, 11);
  GpuEventRecord late_call = call;
  late_call.event.start_ns = 1500;
  late_call.event.end_ns = 1510;
  encoder.AddGpu(late_call);
  encoder.AddGpu(Gpu(EventKind::kGpuKernel, gemm, 3500, 3600, 7, 46, -2000, mm));
  v1::EventBatch next = encoder.Finish(table, v1::DropCounters());
  next.set_sequence(2);
  EXPECT_TRUE(validator.Validate(next).ok()) << validator.Validate(next);
}

}  // namespace
}  // namespace trainscope::agent
