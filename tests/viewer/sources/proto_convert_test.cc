#include "trainscope/viewer/proto_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(ProtoConvertTest, AlertPutsItsCauseFirst) {
  trainscope::v1::Alert alert;
  alert.set_job_id("job-a");
  alert.set_rule("collective_wait");
  alert.set_step(57);
  alert.add_ranks(0);
  alert.add_ranks(2);
  alert.add_ranks(3);
  alert.set_cause_rank(2);
  alert.set_metric("wait_ns");
  alert.set_observed(18.6e6);
  alert.set_baseline(5.1e6);
  alert.set_message("ranks 0,3 wait for rank 2 in collectives");
  const Alert out = ConvertAlert(alert);
  EXPECT_EQ(out.job, "job-a");
  EXPECT_EQ(out.rule, "collective_wait");
  EXPECT_EQ(out.step, 57u);
  EXPECT_THAT(out.ranks, ::testing::ElementsAre(2u, 0u, 3u));
  EXPECT_EQ(out.cause, 2);
  EXPECT_EQ(out.metric, "wait_ns");
  EXPECT_DOUBLE_EQ(out.value, 18.6e6);
  EXPECT_DOUBLE_EQ(out.baseline, 5.1e6);
  EXPECT_EQ(out.text, "ranks 0,3 wait for rank 2 in collectives");
}

TEST(ProtoConvertTest, AlertWithoutCauseKeepsItsRanks) {
  trainscope::v1::Alert alert;
  alert.set_cause_rank(-1);
  alert.add_ranks(1);
  alert.set_operator_name("aten::conv2d");
  const Alert out = ConvertAlert(alert);
  EXPECT_THAT(out.ranks, ::testing::ElementsAre(1u));
  EXPECT_EQ(out.cause, -1);
  EXPECT_EQ(out.op, "aten::conv2d");
}

TEST(ProtoConvertTest, AlertKeepsItsStateIdOnsetAndTime) {
  trainscope::v1::Alert alert;
  alert.set_alert_id(7);
  alert.set_state(trainscope::v1::ALERT_STATE_CLEARED);
  alert.set_step(45);
  alert.set_onset_step(30);
  alert.set_raised_unix_ns(2'500'000'000);
  alert.set_caused_by_alert_id(3);
  Alert out = ConvertAlert(alert);
  EXPECT_EQ(out.alert_id, 7u);
  EXPECT_EQ(out.state, AlertState::kCleared);
  EXPECT_EQ(out.onset_step, 30u);
  EXPECT_EQ(out.changed_unix_ns, 2'500'000'000);
  EXPECT_EQ(out.caused_by_alert_id, 3u);
  alert.set_state(trainscope::v1::ALERT_STATE_RAISED);
  EXPECT_EQ(ConvertAlert(alert).state, AlertState::kRaised);
}

TEST(ProtoConvertTest, JobSummaryKeepsWhetherTheLossSwitchWasEverSent) {
  trainscope::v1::JobSummary summary;
  summary.set_job_id("digits");
  summary.set_recording(true);
  EXPECT_EQ(ConvertJobSummary(summary).loss_contribution, std::nullopt);
  summary.set_loss_contribution(false);
  const JobRecord job = ConvertJobSummary(summary);
  EXPECT_EQ(job.loss_contribution, std::optional<bool>(false));
  EXPECT_TRUE(job.recording);
}

// A rank's rack (RankStatus.rack, its agent's Hello.rack) reaches its device.
TEST(ProtoConvertTest, RanksKeepTheirRackAndDevicesTakeIt) {
  trainscope::v1::RankStatus status;
  status.set_rank(3);
  status.set_host("node-1");
  status.set_rack("rack-b");
  const RankRecord rank = ConvertRank(status);
  EXPECT_EQ(rank.rack, "rack-b");
  StepRecord step;
  step.devices.push_back({});
  step.devices.back().rank = 3;
  step.devices.back().stage = 1;
  const std::vector<DeviceInfo> devices = DevicesOf({step}, {rank});
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].host, "node-1");
  EXPECT_EQ(devices[0].rack, "rack-b");
  EXPECT_EQ(devices[0].stage, 1u);
}

TEST(ProtoConvertTest, GpuOperatorsKeepTheirClassDeviceAndStream) {
  trainscope::v1::OperatorBatch batch;
  batch.add_strings("");
  batch.add_strings("sm90_gemm");
  batch.add_strings("ncclDevKernel_AllReduce");
  batch.add_strings("Memcpy HtoD");
  const trainscope::v1::OperatorClass classes[] = {trainscope::v1::OPERATOR_CLASS_GPU_KERNEL,
                                                   trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE,
                                                   trainscope::v1::OPERATOR_CLASS_GPU_COPY};
  for (uint32_t i = 0; i < 3; ++i) {
    auto* op = batch.add_operators();
    op->set_rank(2);
    op->set_name(i + 1);
    op->set_op_class(classes[i]);
    op->set_gpu_device(1);
    op->set_gpu_stream(7 + i);
  }
  const OperatorBatchRecord out = ConvertOperators(batch);
  ASSERT_EQ(out.operators.size(), 3u);
  EXPECT_EQ(out.operators[0].op_class, OpClass::kGpuKernel);
  EXPECT_EQ(out.operators[1].op_class, OpClass::kGpuCollective);
  EXPECT_EQ(out.operators[2].op_class, OpClass::kGpuCopy);
  EXPECT_EQ(out.operators[2].gpu_device, 1u);
  EXPECT_EQ(out.operators[2].gpu_stream, 9u);
}

TEST(ProtoConvertTest, DeviceStepKeepsDeviceTimeAndTopKernels) {
  trainscope::v1::StepReport report;
  report.set_step(4);
  auto* d = report.add_devices();
  d->set_rank(1);
  d->set_has_gpu(true);
  d->set_gpu_busy_ns(38'500'000);
  d->set_transfer_ns(9'000'000);
  d->set_h2d_copy_ns(100);
  d->set_d2h_copy_ns(20);
  d->set_other_copy_ns(3);
  d->set_gpu_idle_launch_bound_ns(120'000'000);
  d->set_cpu_compute_ns(222'000'000);
  d->set_kernels(900);
  d->set_gpu_streams(3);
  auto* k = d->add_top_kernels();
  k->set_name("sm90_gemm");
  k->set_op_class(trainscope::v1::OPERATOR_CLASS_GPU_KERNEL);
  k->set_count(12);
  k->set_total_ns(5'000'000);
  k->set_launch_op("aten::mm");
  const StepRecord step = ConvertStep(report);
  ASSERT_EQ(step.devices.size(), 1u);
  const DeviceStepRecord& r = step.devices[0];
  EXPECT_TRUE(r.has_gpu);
  EXPECT_EQ(r.gpu_busy_ns, 38'500'000);
  EXPECT_EQ(r.transfer_ns, 9'000'000);
  EXPECT_EQ(r.copy_ns(), 123);
  EXPECT_EQ(r.gpu_idle_launch_bound_ns, 120'000'000);
  EXPECT_EQ(r.cpu_compute_ns, 222'000'000);
  EXPECT_EQ(r.kernels, 900u);
  EXPECT_EQ(r.gpu_streams, 3u);
  ASSERT_EQ(r.top_kernels.size(), 1u);
  EXPECT_EQ(r.top_kernels[0].name, "sm90_gemm");
  EXPECT_EQ(r.top_kernels[0].op_class, OpClass::kGpuKernel);
  EXPECT_EQ(r.top_kernels[0].count, 12u);
  EXPECT_EQ(r.top_kernels[0].total_ns, 5'000'000);
  EXPECT_EQ(r.top_kernels[0].launch_op, "aten::mm");
}

TEST(ProtoConvertTest, StepKeepsItsPairTraffic) {
  trainscope::v1::StepReport report;
  report.set_step(7);
  auto* t = report.add_traffic();
  t->set_step(7);
  t->set_src_rank(2);
  t->set_dst_rank(5);
  t->set_group("pg:stage0");
  t->set_exact(true);
  t->set_bytes(4 << 20);
  t->set_messages(3);
  t->set_duration_ns(1'500'000);
  t->set_locality(trainscope::v1::LINK_LOCALITY_CROSS_HOST);
  t->set_src_host("a");
  t->set_dst_host("b");
  const StepRecord step = ConvertStep(report);
  ASSERT_EQ(step.traffic.size(), 1u);
  const PairTrafficRecord& r = step.traffic[0];
  EXPECT_EQ(r.step, 7u);
  EXPECT_EQ(r.src_rank, 2u);
  EXPECT_EQ(r.dst_rank, 5u);
  EXPECT_EQ(r.group, "pg:stage0");
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, 4u << 20);
  EXPECT_EQ(r.messages, 3u);
  EXPECT_EQ(r.duration_ns, 1'500'000);
  EXPECT_EQ(r.locality, LinkLocality::kCrossHost);
  EXPECT_EQ(r.src_host, "a");
  EXPECT_EQ(r.dst_host, "b");
}

}  // namespace
}  // namespace trainscope::viewer
