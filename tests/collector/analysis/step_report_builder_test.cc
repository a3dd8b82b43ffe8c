#include "trainscope/collector/analysis/step_report_builder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using ::testing::ElementsAre;

v1::DeviceStep Device(uint32_t rank, uint32_t stage, int64_t start, int64_t end) {
  v1::DeviceStep d;
  d.set_rank(rank);
  d.set_stage(stage);
  d.set_start_ns(start);
  d.set_end_ns(end);
  d.set_flops(1000 * (rank + 1));
  d.set_compute_ns(100 * (rank + 1));
  d.set_idle_ns(10);
  d.set_wait_ns(20 * rank);
  return d;
}

TEST(StepReportBuilderTest, SpansTheDevicesAndTotalsTheirStages) {
  StepReportBuilder builder(7);
  builder.AddDevice(Device(0, 0, 100, 900));
  builder.AddDevice(Device(1, 1, 50, 800));
  builder.AddDevice(Device(2, 1, 120, 950));
  builder.AddMissingRank(3);
  const v1::StepReport report = std::move(builder).Build();

  EXPECT_EQ(report.step(), 7u);
  EXPECT_EQ(report.start_ns(), 50);
  EXPECT_EQ(report.end_ns(), 950);
  ASSERT_EQ(report.devices_size(), 3);
  EXPECT_EQ(report.devices(2).rank(), 2u);
  EXPECT_THAT(report.missing_ranks(), ElementsAre(3u));
  ASSERT_EQ(report.stages_size(), 2);
  const v1::StageStep& second = report.stages(1);
  EXPECT_EQ(second.step(), 7u);
  EXPECT_EQ(second.stage(), 1u);
  EXPECT_THAT(second.ranks(), ElementsAre(1u, 2u));
  EXPECT_EQ(second.flops(), 5000u);                 // summed
  EXPECT_EQ(second.compute_ns(), (200 + 300) / 2);  // the devices' mean
  EXPECT_EQ(second.bubble_ns(), (10 + 20 + 10 + 40) / 2);
}

TEST(StepReportBuilderTest, LinksBecomeLinkSteps) {
  StepReportBuilder builder(3);
  CollectiveMatcher::Links& links = *builder.links();
  links[{0, 1, false}] = {1000, 500, 2};
  links[{1, 0, true}] = {64, 0, 1};
  const v1::StepReport report = std::move(builder).Build();
  ASSERT_EQ(report.links_size(), 2);
  const v1::LinkStep& p2p = report.links(0);
  EXPECT_EQ(p2p.step(), 3u);
  EXPECT_EQ(p2p.link_type(), "p2p");
  EXPECT_EQ(p2p.src_rank(), 0u);
  EXPECT_EQ(p2p.dst_rank(), 1u);
  EXPECT_EQ(p2p.bytes(), 1000u);
  EXPECT_DOUBLE_EQ(p2p.bytes_per_second(), 2e9);
  EXPECT_EQ(p2p.transfers(), 2u);
  EXPECT_EQ(report.links(1).link_type(), "collective");
  EXPECT_EQ(report.links(1).bytes_per_second(), 0) << "no duration, no rate";
}

TEST(StepReportBuilderTest, PairTrafficNamesItsGroupAndBackend) {
  JobStrings strings;
  const uint32_t group = strings.Intern("pg:stages[0,1]");
  StepReportBuilder builder(4, &strings);
  CollectiveMatcher::Links& links = *builder.links();
  links.traffic[{0, 1, group, true}] = {4096, 2, 300, TrafficModel::Backend::kGloo};
  links.traffic[{1, 0, 0, false}] = {64, 6, 10, TrafficModel::Backend::kNccl};
  const v1::StepReport report = std::move(builder).Build();
  ASSERT_EQ(report.traffic_size(), 2);
  const v1::PairTraffic& p2p = report.traffic(0);
  EXPECT_EQ(p2p.step(), 4u);
  EXPECT_EQ(p2p.src_rank(), 0u);
  EXPECT_EQ(p2p.dst_rank(), 1u);
  EXPECT_EQ(p2p.group(), "pg:stages[0,1]");
  EXPECT_TRUE(p2p.exact());
  EXPECT_EQ(p2p.backend(), "gloo");
  EXPECT_EQ(p2p.bytes(), 4096u);
  EXPECT_EQ(p2p.messages(), 2u);
  EXPECT_EQ(p2p.duration_ns(), 300);
  EXPECT_EQ(report.traffic(1).group(), "");
  EXPECT_FALSE(report.traffic(1).exact());
  EXPECT_EQ(report.traffic(1).backend(), "nccl");
}

TEST(StepReportBuilderTest, AStepWithoutDevicesHasNoSpan) {
  StepReportBuilder builder(9);
  builder.AddMissingRank(0);
  const v1::StepReport report = std::move(builder).Build();
  EXPECT_EQ(report.start_ns(), 0);
  EXPECT_EQ(report.devices_size(), 0);
  EXPECT_EQ(report.stages_size(), 0);
}

}  // namespace
}  // namespace trainscope::collector
