#include "clock.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"
#include "trainscope/agent/tick_fit.h"

namespace trainscope::pytorch {
namespace {

using agent::Agent;
using agent::TickFit;

// Wide margins: a loaded 2-core VM may deschedule a thread for milliseconds.
constexpr int64_t kMarginNs = 50'000'000;

TEST(TickFitTest, MapsTicksLinearlyFromItsBaseBothWays) {
  const TickFit fit{1'000'000, 7'000'000'000, uint64_t{3} << 29};  // 0.375 ns per tick
  EXPECT_EQ(fit.ToNs(1'000'000), 7'000'000'000);
  EXPECT_EQ(fit.ToNs(1'010'000), 7'000'003'750);
  EXPECT_EQ(fit.ToNs(990'000), 6'999'996'250);  // before the base (a fit anchored later)
  EXPECT_EQ(TickFit::Identity().ToNs(123'456'789'012), 123'456'789'012);
}

TEST(TickClockTest, TheMonotonicSourceIsTheIdentity) {
  TickClock clock(TickClock::Source::kMonotonic);
  EXPECT_FALSE(clock.uses_tsc());
  const TickFit fit = clock.CurrentFit();
  EXPECT_EQ(fit.ToNs(987'654'321), 987'654'321);
  const int64_t before = Agent::Now();
  const uint64_t ticks = clock.Ticks();
  const int64_t after = Agent::Now();
  EXPECT_GE(static_cast<int64_t>(ticks), before);
  EXPECT_LE(static_cast<int64_t>(ticks), after);
  EXPECT_EQ(clock.ToMonotonicNs(ticks), static_cast<int64_t>(ticks));
}

// What the sender maps raw records with (CurrentFit) is what the hot path's
// own conversion gives, and both land on CLOCK_MONOTONIC.
TEST(TickClockTest, TheSendersFitIsTheClocksMapping) {
  TickClock clock(TickClock::Source::kAuto);
  if (!clock.uses_tsc()) GTEST_SKIP() << "no invariant TSC here: the identity is tested above";
  const TickFit fit = clock.CurrentFit();
  const uint64_t now_ticks = clock.Ticks();
  for (uint64_t ticks :
       {now_ticks - uint64_t{1'000'000'000}, now_ticks, now_ticks + uint64_t{3'000'000}}) {
    EXPECT_EQ(fit.ToNs(ticks), clock.ToMonotonicNs(ticks));
  }
  int64_t start_ns = 0, end_ns = 0;
  clock.ToMonotonicNs(now_ticks - 5000, now_ticks, &start_ns, &end_ns);
  EXPECT_EQ(end_ns, fit.ToNs(now_ticks));
  EXPECT_NEAR(static_cast<double>(start_ns), static_cast<double>(fit.ToNs(now_ticks - 5000)), 1.0);
  const int64_t before = Agent::Now();
  const int64_t mapped = fit.ToNs(clock.Ticks());
  const int64_t after = Agent::Now();
  EXPECT_GE(mapped, before - kMarginNs);
  EXPECT_LE(mapped, after + kMarginNs);
}

// Ticks written before a recalibration and mapped after it (the sender's
// next batch) still land where CLOCK_MONOTONIC was when they were read, and
// ticks in order map in order under each fit.
TEST(TickClockTest, TicksReadBeforeARecalibrationMapCorrectlyAfterIt) {
  TickClock clock(TickClock::Source::kAuto);
  if (!clock.uses_tsc()) GTEST_SKIP() << "no invariant TSC here";
  const int64_t before = Agent::Now();
  const uint64_t early = clock.Ticks();
  const int64_t after = Agent::Now();
  const TickFit first = clock.CurrentFit();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  clock.Recalibrate();
  const TickFit second = clock.CurrentFit();
  EXPECT_GT(second.base_ticks, first.base_ticks);  // re-anchored
  EXPECT_GE(second.ToNs(early), before - kMarginNs);
  EXPECT_LE(second.ToNs(early), after + kMarginNs);
  // Both fits agree on a tick well within the margin.
  EXPECT_NEAR(static_cast<double>(second.ToNs(early)), static_cast<double>(first.ToNs(early)), 1e6);
  uint64_t ticks = early;
  int64_t previous = second.ToNs(ticks);
  for (int i = 0; i < 1000; ++i) {
    ticks += 997;
    const int64_t ns = second.ToNs(ticks);
    ASSERT_GE(ns, previous);
    previous = ns;
  }
}

}  // namespace
}  // namespace trainscope::pytorch
