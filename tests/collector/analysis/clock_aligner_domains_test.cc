// ClockAligner's clock domains: devices reading one clock (ranks of one host)
// share one line exactly; other domains are fitted as before.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/synthetic_clock_job.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/clock_aligner.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {
namespace {

using Layout = SyntheticClockJob::Layout;

constexpr double kBudgetNs = 20'000;
constexpr int kMeasureFrom = 10;

struct Errors {
  std::vector<double> abs_ns;
  double Quantile(double q) const {
    if (abs_ns.empty()) return 0;
    std::vector<double> v = abs_ns;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  }
  double Max() const { return abs_ns.empty() ? 0 : *std::max_element(abs_ns.begin(), abs_ns.end()); }
};

// Signed error of `rank` against `other` at true time t.
double ErrorAt(const ClockAligner& aligner, const SyntheticClockJob& job, uint32_t rank,
               uint32_t other, int64_t t) {
  return static_cast<double>(aligner.ToReference(rank, job.Local(rank, t)) -
                             aligner.ToReference(other, job.Local(other, t)));
}

// Errors against the reference, split by whether the rank shares the
// reference's domain: same-domain errors must be exactly 0.
struct Split {
  Errors same;   // ranks in a domain with another rank, against that domain's first rank
  Errors cross;  // every other rank against the reference
};

void Measure(const ClockAligner& aligner, const SyntheticClockJob& job, int k, Split* split) {
  const auto& config = job.config();
  for (uint32_t r = 0; r < config.world_size; ++r) {
    if (r == aligner.reference() || !job.Alive(r, k)) continue;
    const uint32_t leader = aligner.Leader(r);
    for (int64_t t : job.EvalTimes(k)) {
      if (leader != r) split->same.abs_ns.push_back(std::fabs(ErrorAt(aligner, job, r, leader, t)));
      if (leader != aligner.reference()) {
        split->cross.abs_ns.push_back(std::fabs(ErrorAt(aligner, job, r, aligner.reference(), t)));
      }
    }
  }
}

Split RunSeeds(SyntheticClockJob::Config config, int seeds) {
  Split pooled;
  for (int seed = 1; seed <= seeds; ++seed) {
    JobStrings strings;
    GroupDirectory groups(&strings);
    groups.set_world_size(config.world_size);
    config.seed = static_cast<uint64_t>(seed);
    SyntheticClockJob job(config, &strings);
    ClockAligner aligner(&groups);
    job.DeclareDomains(&aligner);
    for (int k = 0; k < config.iterations; ++k) {
      job.FeedThrough(k, &aligner);
      if (k >= kMeasureFrom) Measure(aligner, job, k, &pooled);
    }
  }
  return pooled;
}

void Print(const std::string& name, const Errors& e) {
  char line[200];
  std::snprintf(line, sizeof(line),
                "[clock] %s: alignment error p50 %.1f us, p99 %.1f us, max %.1f us (n=%zu)",
                name.c_str(), e.Quantile(0.5) / 1e3, e.Quantile(0.99) / 1e3, e.Max() / 1e3,
                e.abs_ns.size());
  std::cout << line << "\n";
}

class ClockAlignerDomainsTest : public testing::Test {
 protected:
  JobStrings strings_;
  GroupDirectory groups_{&strings_};
};

TEST_F(ClockAlignerDomainsTest, TwoHostsOfFourRanksSameHostExactCrossHostWithinBudget) {
  SyntheticClockJob::Config config;
  config.world_size = 8;
  config.iterations = 60;
  config.straggler = 5;
  config.host = {0, 0, 0, 0, 1, 1, 1, 1};
  const Split e = RunSeeds(config, 20);
  Print("two_hosts_same_domain", e.same);
  Print("two_hosts_cross_domain", e.cross);
  ASSERT_FALSE(e.same.abs_ns.empty());
  EXPECT_EQ(e.same.Max(), 0);  // one clock: no fitting noise at all
  EXPECT_LE(e.cross.Quantile(0.99), kBudgetNs);

  config.seed = 7;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(8);
  ClockAligner aligner(&groups_);
  job.DeclareDomains(&aligner);
  for (int k = 0; k < config.iterations; ++k) job.FeedThrough(k, &aligner);
  EXPECT_EQ(aligner.reference(), 0u);
  for (uint32_t r = 0; r < 8; ++r) {
    const v1::ClockEstimate c = aligner.Estimate(r);
    EXPECT_EQ(c.clock_domain(), r < 4 ? "host-0" : "host-1") << r;
    EXPECT_EQ(c.domain_leader(), r < 4 ? 0u : 4u) << r;
    EXPECT_EQ(c.collective_samples(), 60u) << r;  // counted on each rank still
    if (r == 0) {
      EXPECT_TRUE(c.reference());
    } else if (r == 4) {
      EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_COLLECTIVES);
    } else {
      EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_CLOCK_DOMAIN) << r;
    }
    if (r < 4) {
      EXPECT_EQ(c.offset_to_reference_device_ns(), 0) << r;
      EXPECT_EQ(c.drift_to_reference_device_ppm(), 0) << r;
    } else {
      const v1::ClockEstimate leader = aligner.Estimate(4);
      EXPECT_EQ(c.offset_to_reference_device_ns(), leader.offset_to_reference_device_ns()) << r;
      EXPECT_EQ(c.offset_ns(), leader.offset_ns()) << r;
      // Reference clock minus this one, at the anchor: the injected offsets' difference
      // (plus the drift since the start, well under the 50 ms offsets' scale).
      const int64_t at = job.EvalTimes(config.iterations - 1).back();
      EXPECT_NEAR(static_cast<double>(c.offset_to_reference_device_ns()),
                  static_cast<double>(job.Local(0, at) - job.Local(4, at)), 0.2e6)
          << r;
    }
  }
}

TEST_F(ClockAlignerDomainsTest, RankWithAnotherClockOnTheHostIsStillFitted) {
  // What a test's injected perturbation declares: rank 3 on another domain.
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 40;
  config.host = {0, 0, 0, -1};
  const Split e = RunSeeds(config, 10);
  Print("perturbed_rank_same_domain", e.same);
  Print("perturbed_rank_fitted", e.cross);
  ASSERT_FALSE(e.same.abs_ns.empty());  // the domains were declared and kept
  EXPECT_EQ(e.same.Max(), 0);
  ASSERT_FALSE(e.cross.abs_ns.empty());
  EXPECT_LE(e.cross.Quantile(0.99), kBudgetNs);

  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  job.DeclareDomains(&aligner);
  for (int k = 0; k < config.iterations; ++k) job.FeedThrough(k, &aligner);
  EXPECT_EQ(aligner.Estimate(3).source(), v1::CLOCK_SOURCE_COLLECTIVES);
  EXPECT_EQ(aligner.Estimate(3).domain_leader(), 3u);
  EXPECT_NE(aligner.Estimate(3).offset_to_reference_device_ns(), 0);
}

TEST_F(ClockAlignerDomainsTest, ProbesOfADomainFeedItsLeader) {
  SyntheticClockJob::Config config;
  config.layout = Layout::kProbesOnly;
  config.world_size = 4;
  config.iterations = 30;
  config.probe_period_ns = 50'000'000;
  config.host = {0, 0, 1, 1};
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  job.DeclareDomains(&aligner);
  for (int k = 0; k < config.iterations; ++k) job.FeedThrough(k, &aligner);
  for (uint32_t r = 0; r < 4; ++r) EXPECT_GT(aligner.Estimate(r).probe_samples(), 20u) << r;
  EXPECT_EQ(aligner.Estimate(2).source(), v1::CLOCK_SOURCE_PROBES);
  EXPECT_EQ(aligner.Estimate(3).source(), v1::CLOCK_SOURCE_CLOCK_DOMAIN);
  const int64_t t = job.EvalTimes(config.iterations - 1).back();
  EXPECT_EQ(ErrorAt(aligner, job, 1, 0, t), 0);
  EXPECT_EQ(ErrorAt(aligner, job, 3, 2, t), 0);
  // Across hosts, within the probes' half round trip (as for single ranks).
  EXPECT_LE(std::fabs(ErrorAt(aligner, job, 2, 0, t)), 150'000);
}

TEST_F(ClockAlignerDomainsTest, SendRecvInsideADomainIsIgnoredAcrossFitted) {
  // Pipeline: sends 0 -> 1 and 2 -> 3 stay inside a host; the stage groups
  // {0,2} and {1,3} cross hosts.
  SyntheticClockJob::Config config;
  config.layout = Layout::kPipeline;
  config.iterations = 40;
  config.seed = 3;
  config.host = {0, 0, 1, 1};
  const Split e = RunSeeds(config, 10);
  Print("pipeline_same_domain", e.same);
  Print("pipeline_cross_domain", e.cross);
  ASSERT_FALSE(e.same.abs_ns.empty());  // the domains were declared and kept
  EXPECT_EQ(e.same.Max(), 0);
  EXPECT_LE(e.cross.Quantile(0.99), kBudgetNs);
}

TEST_F(ClockAlignerDomainsTest, DomainDeclaredLateRealigns) {
  // Ranks that are already aligned one by one, then learn they share clocks
  // (a leader change with samples taken): the aligner starts over and ends
  // exact within each host and within budget across.
  SyntheticClockJob::Config config;
  config.world_size = 8;
  config.iterations = 50;
  config.host = {1, 0, 0, 0, 1, 1, 1, 0};
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(8);
  ClockAligner aligner(&groups_);
  for (int k = 0; k < 10; ++k) job.FeedThrough(k, &aligner);
  EXPECT_EQ(aligner.Estimate(3).source(), v1::CLOCK_SOURCE_COLLECTIVES);
  job.DeclareDomains(&aligner);
  Split e;
  for (int k = 10; k < config.iterations; ++k) {
    job.FeedThrough(k, &aligner);
    if (k >= 20) Measure(aligner, job, k, &e);
  }
  EXPECT_EQ(aligner.Leader(4), 0u);  // the reference leads its domain
  EXPECT_EQ(aligner.Leader(7), 1u);
  ASSERT_FALSE(e.same.abs_ns.empty());
  EXPECT_EQ(e.same.Max(), 0);
  EXPECT_LE(e.cross.Quantile(0.99), kBudgetNs);
}

TEST_F(ClockAlignerDomainsTest, EmptyDomainIsAClockOfItsOwn) {
  // Old agents and imported traces name no domain: every rank is fitted.
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 20;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  job.DeclareDomains(&aligner);
  for (int k = 0; k < config.iterations; ++k) job.FeedThrough(k, &aligner);
  for (uint32_t r = 1; r < 4; ++r) {
    EXPECT_EQ(aligner.Leader(r), r);
    EXPECT_EQ(aligner.Estimate(r).source(), v1::CLOCK_SOURCE_COLLECTIVES) << r;
    EXPECT_EQ(aligner.Estimate(r).clock_domain(), "");
  }
}

}  // namespace
}  // namespace trainscope::collector
