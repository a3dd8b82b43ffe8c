#include "trainscope/collector/import/step_finder.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;

// `steps` iterations of 100 ms on thread 1: zero_grad, forward (with a
// layer repeated inside), backward, an optimizer range (two when asked),
// and some noise that repeats irregularly.
StepFinder Iterations(int steps, bool optimizer, bool two_optimizers = false) {
  StepFinder f;
  for (int s = 0; s < steps; ++s) {
    const int64_t t = 1000 * kMs + s * 100 * kMs;
    f.Add(1, t, t + 2 * kMs, "Optimizer.zero_grad#SGD.zero_grad");
    for (int k = 0; k < s % 3; ++k)
      f.Add(1, t + (3 + k) * kMs, t + (3 + k) * kMs + 1, "aten::zeros");
    f.Add(1, t + 10 * kMs, t + 40 * kMs, "## forward ##");
    for (int l = 0; l < 5; ++l) f.Add(1, t + (11 + 5 * l) * kMs, t + (15 + 5 * l) * kMs, "layer");
    f.Add(1, t + 40 * kMs, t + 80 * kMs, "## backward ##");
    if (optimizer) {
      f.Add(1, t + 80 * kMs, t + 90 * kMs, "## optimizer ##");
      f.Add(1, t + 81 * kMs, t + 85 * kMs, "Optimizer.step#Shampoo.step");
      if (two_optimizers) f.Add(1, t + 86 * kMs, t + 89 * kMs, "Optimizer.step#EMA.step");
    } else {
      f.Add(1, t + 80 * kMs, t + 90 * kMs, "## optimizer ##");
    }
  }
  // A busy side thread with short ops: not the main thread.
  for (int i = 0; i < 500; ++i) f.Add(2, 1000 * kMs + i * kMs, 1000 * kMs + i * kMs + 10, "x");
  return f;
}

TEST(StepFinderTest, OptimizerRangesEndSteps) {
  const StepFinder::Result r = Iterations(4, /*optimizer=*/true).Find();
  EXPECT_EQ(r.source, StepFinder::Source::kOptimizerStep);
  EXPECT_EQ(r.thread, 1);
  EXPECT_THAT(r.starts_ns, ElementsAre(1000 * kMs, 1100 * kMs, 1200 * kMs, 1300 * kMs));
  EXPECT_THAT(r.description, HasSubstr("Optimizer.step#Shampoo.step"));
}

TEST(StepFinderTest, SeveralOptimizersPerIterationCountOnce) {
  const StepFinder::Result r = Iterations(3, true, /*two_optimizers=*/true).Find();
  EXPECT_EQ(r.source, StepFinder::Source::kOptimizerStep);
  EXPECT_THAT(r.starts_ns, ElementsAre(1000 * kMs, 1100 * kMs, 1200 * kMs));
  EXPECT_THAT(r.description, HasSubstr("2 per iteration"));
}

TEST(StepFinderTest, WithoutOptimizerRangesTheRepeatingPatternOfTheMainThread) {
  const StepFinder::Result r = Iterations(5, /*optimizer=*/false).Find();
  EXPECT_EQ(r.source, StepFinder::Source::kRepeatingPattern);
  EXPECT_EQ(r.thread, 1);
  EXPECT_THAT(r.starts_ns, ElementsAre(1000 * kMs, 1100 * kMs, 1200 * kMs, 1300 * kMs, 1400 * kMs));
  EXPECT_THAT(r.description, HasSubstr("Optimizer.zero_grad#SGD.zero_grad"));
}

TEST(StepFinderTest, TwoIterationsOrOneLongRangeSayWhyNone) {
  const StepFinder::Result two = Iterations(2, false).Find();
  EXPECT_EQ(two.source, StepFinder::Source::kNone);
  EXPECT_TRUE(two.starts_ns.empty());
  EXPECT_THAT(two.description, HasSubstr("no steps"));
  EXPECT_THAT(two.description, HasSubstr("at least 3 times"));

  StepFinder one;  // a warm-up and a measured pass inside one range
  one.Add(7, 0, 100 * kMs, "[param|cuda]");
  one.Add(7, 1 * kMs, 40 * kMs, "forward");
  one.Add(7, 50 * kMs, 90 * kMs, "forward");
  const StepFinder::Result r = one.Find();
  EXPECT_EQ(r.source, StepFinder::Source::kNone);
  EXPECT_THAT(r.description, HasSubstr("1 top-level operators of its main thread 7"));

  EXPECT_THAT(StepFinder().Find().description, HasSubstr("no CPU operators"));
}

}  // namespace
}  // namespace trainscope::collector
