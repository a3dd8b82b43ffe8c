#include "trainscope/collector/analysis/rule_history.h"

#include "gtest/gtest.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

constexpr int64_t kMs = 1'000'000;

// Three ranks of one stage with 100 ms steps and 10 ms data wait; ranks 0
// and 1 wait `wait_ns` for rank 2 in a collective.
v1::StepReport Step(uint64_t step, int64_t wait_ns = 30 * kMs) {
  v1::StepReport report;
  report.set_step(step);
  for (uint32_t r = 0; r < 3; ++r) {
    v1::DeviceStep* d = report.add_devices();
    d->set_step(step);
    d->set_rank(r);
    d->set_complete(true);
    d->set_step_time_ns(100 * kMs);
    d->set_data_wait_ns(10 * kMs);
    d->set_wait_ns(r == 2 ? 0 : wait_ns);
    d->set_transfer_ns(5 * kMs);
    d->set_waited_for_rank(r == 2 ? -1 : 2);
  }
  return report;
}

v1::RulesConfig NoWarmup() {
  v1::RulesConfig rules;
  rules.set_warmup_steps(0);
  return WithDefaults(rules);
}

TEST(RuleHistoryTest, WarmupStepsAreCountedButNotRecorded) {
  RuleHistory history(WithDefaults(v1::RulesConfig()));  // warmup_steps 5
  for (uint64_t s = 1; s <= 5; ++s) {
    history.OnStep(Step(s));
    EXPECT_TRUE(history.in_warmup());
  }
  EXPECT_EQ(history.DeviceWindow(0), nullptr);
  history.OnStep(Step(6));
  EXPECT_FALSE(history.in_warmup());
  EXPECT_EQ(history.steps_seen(), 6u);
  ASSERT_NE(history.DeviceWindow(0), nullptr);
  EXPECT_EQ(history.DeviceWindow(0)->size(), 1u);
}

TEST(RuleHistoryTest, DeviceSamplesSplitOwnTimeFromWaits) {
  RuleHistory history(NoWarmup());
  history.OnStep(Step(1));
  const DeviceSample& waiter = history.DeviceWindow(0)->back();
  EXPECT_EQ(waiter.step, 1u);
  EXPECT_DOUBLE_EQ(waiter.own, 60.0 * kMs);  // 100 - 30 waiting - 10 data
  EXPECT_DOUBLE_EQ(waiter.held_up, 0);       // nobody waits for it
  EXPECT_EQ(waiter.waited_for, 2);
  const DeviceSample& late = history.DeviceWindow(2)->back();
  EXPECT_DOUBLE_EQ(late.own, 90.0 * kMs);
  EXPECT_DOUBLE_EQ(late.held_up, 0.3);  // the others wait 30 % of their step for it
  EXPECT_DOUBLE_EQ(late.own_ratio, 1.5);
}

TEST(RuleHistoryTest, DeviceWindowsKeepTheLongestWindowARuleReads) {
  RuleHistory history(NoWarmup());  // low_flops and collective_wait read 20 steps
  for (uint64_t s = 1; s <= 30; ++s) history.OnStep(Step(s));
  ASSERT_NE(history.DeviceWindow(1), nullptr);
  EXPECT_EQ(history.DeviceWindow(1)->size(), 20u);
  EXPECT_EQ(history.DeviceWindow(1)->front().step, 11u);
}

TEST(RuleHistoryTest, IncompleteDevicesAreNotRecorded) {
  RuleHistory history(NoWarmup());
  v1::StepReport report = Step(1);
  report.mutable_devices(1)->set_complete(false);
  history.OnStep(report);
  EXPECT_EQ(history.DeviceWindow(1), nullptr);
  EXPECT_NE(history.DeviceWindow(0), nullptr);
  EXPECT_EQ(CompleteDevices(report).size(), 2u);
}

TEST(RuleHistoryTest, AStageThatLeavesTheReportLosesItsWindow) {
  RuleHistory history(NoWarmup());
  for (uint64_t s = 1; s <= 3; ++s) {
    v1::StepReport report = Step(s);
    for (uint32_t stage = 0; stage < (s < 3 ? 2u : 1u); ++stage) {
      v1::StageStep* st = report.add_stages();
      st->set_stage(stage);
      st->add_ranks(stage);
      st->set_compute_ns(50 * kMs);
    }
    history.OnStep(report);
  }
  ASSERT_EQ(history.stage_windows().size(), 1u);
  EXPECT_EQ(history.stage_windows().at(0).size(), 3u);
}

TEST(RuleHistoryTest, LinksKeepTheirLastWindowStepsAndMarkUsableSamples) {
  RuleHistory history(NoWarmup());  // window_steps 5, slow_link.min_bytes 4096
  auto add_link = [](v1::StepReport* report, uint32_t src, uint32_t dst, uint64_t bytes,
                     const char* type = "collective") {
    v1::LinkStep* l = report->add_links();
    l->set_src_rank(src);
    l->set_dst_rank(dst);
    l->set_link_type(type);
    l->set_bytes(bytes);
    l->set_bytes_per_second(1e9);
  };
  v1::StepReport first = Step(1, /*wait_ns=*/1 * kMs);  // waits under the 5 ms transfers
  add_link(&first, 0, 1, 1 << 20);
  add_link(&first, 1, 0, 100);      // latency-bound: not usable
  add_link(&first, 0, 2, 1 << 20);  // fine: rank 2 waits for nobody
  history.OnStep(first);
  v1::StepReport second = Step(2);  // ranks 0 and 1 wait 30 ms: longer than they transfer
  add_link(&second, 0, 1, 1 << 20);
  // A send/recv link's duration starts at its later end: the waits are not in it.
  add_link(&second, 1, 0, 1 << 20, "p2p");
  add_link(&second, 1, 2, 100, "p2p");  // latency-bound: not usable either way
  history.OnStep(second);

  const std::deque<LinkSample>* link = history.LinkWindow("collective 0000000000 0000000001");
  ASSERT_NE(link, nullptr);
  ASSERT_EQ(link->size(), 2u);
  EXPECT_TRUE((*link)[0].usable);
  EXPECT_FALSE((*link)[1].usable) << "its duration measures the wait";
  EXPECT_FALSE(history.LinkWindow("collective 0000000001 0000000000")->front().usable);
  EXPECT_TRUE(history.LinkWindow("p2p 0000000001 0000000000")->front().usable);
  EXPECT_FALSE(history.LinkWindow("p2p 0000000001 0000000002")->front().usable);

  for (uint64_t s = 3; s <= 6; ++s) history.OnStep(Step(s));
  // Step 1 is 5 steps old.
  EXPECT_EQ(history.LinkWindow("collective 0000000000 0000000002"), nullptr);
  ASSERT_NE(history.LinkWindow("collective 0000000000 0000000001"), nullptr);
  EXPECT_EQ(history.LinkWindow("collective 0000000000 0000000001")->size(), 1u);
}

TEST(RuleHistoryTest, LinkKeysSortByTypeThenRanks) {
  v1::LinkStep a;
  a.set_link_type("collective");
  a.set_src_rank(2);
  a.set_dst_rank(10);
  EXPECT_EQ(RuleHistory::LinkKey(a), "collective 0000000002 0000000010");
}

TEST(RuleHistoryTest, WindowHelpersReadTheTrailingSamples) {
  std::deque<DeviceSample> window;
  for (uint64_t s = 1; s <= 6; ++s) {
    DeviceSample sample;
    sample.step = s;
    sample.wait = s >= 4 ? 10 : 1;
    window.push_back(sample);
  }
  auto wait = [](const DeviceSample& s) { return s.wait; };
  EXPECT_EQ(Last(window, 2, wait), (std::vector<double>{10, 10}));
  EXPECT_EQ(Last(window, 10, wait).size(), 6u);
  auto high = [](const DeviceSample& s) { return s.wait > 5; };
  EXPECT_EQ(TrailingOnset(window, 6, high), 4u);
  EXPECT_EQ(TrailingOnset(window, 2, high), 5u);  // looks at the last 2 only
  EXPECT_EQ(TrailingOnset(window, 6, [](const DeviceSample&) { return false; }), 6u);
}

}  // namespace
}  // namespace trainscope::collector
