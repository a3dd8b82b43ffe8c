// slow_link (slow_link_rule.cc).
#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "synthetic_step_reports.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"

namespace trainscope::collector {
namespace {

using testing::Holding;
using testing::kMs;
using testing::RunRule;
using testing::SyntheticJob;

TEST(SlowLinkRuleTest, NamesTheSlowLinkAmongSimilarOnes) {
  SyntheticJob job(4, 1, 11);
  job.link_src = 1;
  job.link_dst = 2;
  job.link_extra_ns = 5 * kMs;
  job.slow_link = {50, 1000};
  v1::RulesConfig rules;
  rules.mutable_slow_link()->set_collective_links(true);
  auto verdicts = RunRule(job, &MakeSlowLinkRule, rules, 70);
  for (uint64_t s = 6; s < 50; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[70]), ::testing::ElementsAre("collective 0000000001 0000000002"));
  for (const RuleVerdict& v : verdicts[70]) {
    if (!v.holds) continue;
    EXPECT_EQ(v.what, "link 1->2 (collective) is slow");
    EXPECT_THAT(v.values, ::testing::HasSubstr("similar collective links"));
    EXPECT_EQ(v.alert.link_src_rank(), 1);
    EXPECT_EQ(v.alert.link_dst_rank(), 2);
  }
}

TEST(SlowLinkRuleTest, CollectiveLinksAreNotJudgedByDefault) {
  SyntheticJob job(4, 1, 11);
  job.link_src = 1;
  job.link_dst = 2;
  job.link_extra_ns = 5 * kMs;
  job.slow_link = {10, 1000};
  auto verdicts = RunRule(job, &MakeSlowLinkRule, {}, 40);
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(v.empty()) << "step " << step;
}

// The synthetic job's ring links as a pipeline's send/recv links: every
// device waits most of its step (a stage waits on the other), and each
// link's rate swings up to `swing` times either way from step to step
// (small transfers on a loaded host are latency-bound). Steps are 200 ms
// apart, each as long as its devices' step time.
std::function<void(v1::StepReport*)> AsPipelineLinks(uint64_t seed, double swing = 3) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng, swing](v1::StepReport* report) {
    std::uniform_real_distribution<double> log_swing(-std::log(swing), std::log(swing));
    report->set_start_ns(static_cast<int64_t>(report->step()) * 200 * kMs);
    report->set_end_ns(report->start_ns() + report->devices(0).step_time_ns());
    for (v1::DeviceStep& d : *report->mutable_devices()) {
      d.set_wait_ns(20 * (d.transfer_ns() + kMs));
    }
    for (v1::LinkStep& l : *report->mutable_links()) {
      l.set_link_type("p2p");
      l.set_duration_ns(
          static_cast<int64_t>(static_cast<double>(l.duration_ns()) * std::exp(log_swing(*rng))));
      l.set_bytes_per_second(static_cast<double>(l.bytes()) * 1e9 /
                             static_cast<double>(l.duration_ns()));
    }
  };
}

// Link 1 -> 2 of a 4-rank job takes `extra_ns` longer from step `from` on.
SyntheticJob SlowLinkJob(int64_t extra_ns, uint64_t from) {
  SyntheticJob job(4, 1, 11);
  job.link_src = 1;
  job.link_dst = 2;
  job.link_extra_ns = extra_ns;
  job.slow_link = {from, 1000};
  return job;
}

// A send/recv link's duration starts at its later end, so its samples count
// though both ends wait most of the step; one far slower than its peers is
// named, by default.
TEST(SlowLinkRuleTest, NamesASlowSendRecvLinkWhoseEndsWait) {
  SyntheticJob job = SlowLinkJob(40 * kMs, 50);  // as pipeline_train.py --delay-ms 40
  auto verdicts = RunRule(job, &MakeSlowLinkRule, {}, 70, AsPipelineLinks(7));
  for (uint64_t s = 6; s < 50; ++s) EXPECT_TRUE(Holding(verdicts[s]).empty()) << "step " << s;
  EXPECT_THAT(Holding(verdicts[70]), ::testing::ElementsAre("p2p 0000000001 0000000002"));
  for (const RuleVerdict& v : verdicts[70]) {
    if (v.holds) EXPECT_EQ(v.what, "link 1->2 (p2p) is slow");
  }
}

// Latency-bound links swing: one 3x slower than its peers for good (a
// pipeline's backward links against its forward ones), on top of the swing,
// is not a slow link.
TEST(SlowLinkRuleTest, ASendRecvLinkAFewTimesSlowerIsNotNamed) {
  SyntheticJob job = SlowLinkJob(1 * kMs, 1);  // 0.5 ms -> 1.5 ms
  auto verdicts = RunRule(job, &MakeSlowLinkRule, {}, 300, AsPipelineLinks(8));
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(Holding(v).empty()) << "step " << step;
}

// Twenty times slower than its peers but 10 ms of a 60 ms step: not what
// slows the job (p2p_min_step_fraction), so not named; with the fraction
// lowered it is.
TEST(SlowLinkRuleTest, ASendRecvLinkThatCostsLittleOfTheStepIsNotNamed) {
  SyntheticJob job = SlowLinkJob(10 * kMs, 1);
  auto verdicts = RunRule(job, &MakeSlowLinkRule, {}, 60, AsPipelineLinks(9, 1.2));
  for (const auto& [step, v] : verdicts) EXPECT_TRUE(Holding(v).empty()) << "step " << step;
  SyntheticJob again = SlowLinkJob(10 * kMs, 1);
  v1::RulesConfig rules;
  rules.mutable_slow_link()->set_p2p_min_step_fraction(0.1);
  verdicts = RunRule(again, &MakeSlowLinkRule, rules, 60, AsPipelineLinks(9, 1.2));
  EXPECT_THAT(Holding(verdicts[60]), ::testing::ElementsAre("p2p 0000000001 0000000002"));
}

}  // namespace
}  // namespace trainscope::collector
