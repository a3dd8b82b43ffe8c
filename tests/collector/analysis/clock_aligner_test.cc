#include "trainscope/collector/analysis/clock_aligner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/synthetic_clock_job.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {
namespace {

using Layout = SyntheticClockJob::Layout;

// p99 of the aligned end times of truly simultaneous events, relative to the
// reference device, from the 10th collective on.
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
};

// Signed error of `rank` against the reference at true time t.
double ErrorAt(const ClockAligner& aligner, const SyntheticClockJob& job, uint32_t rank,
               int64_t t) {
  const uint32_t ref = aligner.reference();
  return static_cast<double>(aligner.ToReference(rank, job.Local(rank, t)) -
                             aligner.ToReference(ref, job.Local(ref, t)));
}

// Feeds the job iteration by iteration; measures every live rank but
// `excluded` at each iteration's evaluation times once it was fed.
Errors RunJob(SyntheticClockJob& job, ClockAligner& aligner, int measure_from,
              const std::vector<uint32_t>& excluded = {}) {
  Errors errors;
  for (int k = 0; k < job.config().iterations; ++k) {
    job.FeedThrough(k, &aligner);
    if (k < measure_from) continue;
    for (uint32_t r = 0; r < job.config().world_size; ++r) {
      if (r == aligner.reference() || !job.Alive(r, k)) continue;
      if (std::find(excluded.begin(), excluded.end(), r) != excluded.end()) continue;
      for (int64_t t : job.EvalTimes(k))
        errors.abs_ns.push_back(std::fabs(ErrorAt(aligner, job, r, t)));
    }
  }
  return errors;
}

// The same job over `seeds` seeds (other truths, jitter and interleaving),
// errors pooled: a budget on p99 needs more than one run's tail.
Errors RunSeeds(SyntheticClockJob::Config config, int seeds, uint32_t world_size,
                const std::vector<uint32_t>& excluded = {}) {
  Errors pooled;
  for (int seed = 1; seed <= seeds; ++seed) {
    JobStrings strings;
    GroupDirectory groups(&strings);
    groups.set_world_size(world_size);
    config.seed = static_cast<uint64_t>(seed);
    SyntheticClockJob job(config, &strings);
    ClockAligner aligner(&groups);
    const Errors e = RunJob(job, aligner, kMeasureFrom, excluded);
    pooled.abs_ns.insert(pooled.abs_ns.end(), e.abs_ns.begin(), e.abs_ns.end());
  }
  return pooled;
}

void Print(const std::string& name, const Errors& e) {
  char line[200];
  std::snprintf(line, sizeof(line),
                "[clock] %s: alignment error p50 %.1f us, p99 %.1f us, max %.1f us (n=%zu)",
                name.c_str(), e.Quantile(0.5) / 1e3, e.Quantile(0.99) / 1e3, e.Quantile(1.0) / 1e3,
                e.abs_ns.size());
  std::cout << line << "\n";
  testing::Test::RecordProperty(name + "_p50_ns", static_cast<int>(e.Quantile(0.5)));
  testing::Test::RecordProperty(name + "_p99_ns", static_cast<int>(e.Quantile(0.99)));
}

class ClockAlignerTest : public testing::Test {
 protected:
  JobStrings strings_;
  GroupDirectory groups_{&strings_};
};

TEST_F(ClockAlignerTest, DataParallelWithStragglerWithinBudget) {
  SyntheticClockJob::Config config;
  config.world_size = 8;
  config.iterations = 60;
  config.straggler = 5;
  config.seed = 7;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(8);
  ClockAligner aligner(&groups_);
  RunJob(job, aligner, kMeasureFrom);
  const Errors e = RunSeeds(config, 20, 8);
  Print("data_parallel_8_ranks_20_seeds", e);
  EXPECT_LE(e.Quantile(0.99), kBudgetNs);
  EXPECT_EQ(aligner.reference(), 0u);
  for (uint32_t r = 1; r < 8; ++r) {
    EXPECT_EQ(aligner.Estimate(r).source(), v1::CLOCK_SOURCE_COLLECTIVES) << r;
    EXPECT_EQ(aligner.Estimate(r).collective_samples(), 60u) << r;
  }
  EXPECT_TRUE(aligner.TakeJumps().empty());
}

TEST_F(ClockAlignerTest, StragglerDoesNotShiftItsClock) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 30;
  config.straggler = 2;
  config.straggler_delay_ns = 30'000'000;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  RunJob(job, aligner, config.iterations);
  // The estimated offset of the straggler against the reference equals the
  // injected one (30 ms of late arrival would show as 30 ms if it leaked).
  const int64_t t = job.EvalTimes(config.iterations - 1).back();
  const int64_t local_ref = job.Local(0, t), local_straggler = job.Local(2, t);
  const int64_t true_relative = local_ref - local_straggler;
  const int64_t estimated_relative =
      aligner.ToReference(2, local_straggler) - aligner.ToReference(0, local_ref) + true_relative;
  std::cout << "[clock] straggler: injected offset vs reference "
            << (job.injected_offset_ns(0) - job.injected_offset_ns(2)) / 1e3
            << " us, estimate off by " << (estimated_relative - true_relative) / 1e3 << " us\n";
  EXPECT_NEAR(static_cast<double>(estimated_relative), static_cast<double>(true_relative),
              kBudgetNs);
}

TEST_F(ClockAlignerTest, PipelineEveryDeviceWithinBudget) {
  SyntheticClockJob::Config config;
  config.layout = Layout::kPipeline;
  config.iterations = 40;
  config.seed = 3;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  const Errors one_seed = RunJob(job, aligner, kMeasureFrom);
  EXPECT_LE(one_seed.Quantile(0.99), kBudgetNs);
  const Errors e = RunSeeds(config, 20, 4);
  Print("pipeline_2x2_20_seeds", e);
  EXPECT_LE(e.Quantile(0.99), kBudgetNs);
  for (uint32_t r = 1; r < 4; ++r) {
    Errors one;
    for (int64_t t : job.EvalTimes(config.iterations - 1)) {
      one.abs_ns.push_back(std::fabs(ErrorAt(aligner, job, r, t)));
    }
    EXPECT_LE(one.Quantile(1.0), kBudgetNs) << "rank " << r;
  }
  // Rank 1 reaches the reference only through send/recv; rank 3 through
  // stage 1's collectives with rank 1; rank 2 through stage 0's.
  EXPECT_EQ(aligner.Estimate(1).source(), v1::CLOCK_SOURCE_POINT_TO_POINT);
  EXPECT_EQ(aligner.Estimate(2).source(), v1::CLOCK_SOURCE_COLLECTIVES);
  EXPECT_EQ(aligner.Estimate(3).source(), v1::CLOCK_SOURCE_COLLECTIVES);
  EXPECT_GT(aligner.Estimate(1).p2p_constraints(), 0u);
}

int64_t BestProbeRtt(const SyntheticClockJob& job, uint32_t rank) {
  int64_t best = INT64_MAX;
  for (const auto& item : job.streams()[rank]) {
    if (!item.probe) continue;
    best = std::min(best, (item.probe_receive_unix - item.probe_send_unix) -
                              (item.agent_send - item.agent_receive));
  }
  return best;
}

TEST_F(ClockAlignerTest, ProbesOnlyWithinHalfRoundTrip) {
  SyntheticClockJob::Config config;
  config.layout = Layout::kProbesOnly;
  config.world_size = 4;
  config.iterations = 30;
  config.probe_period_ns = 50'000'000;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  const Errors e = RunJob(job, aligner, kMeasureFrom);
  Print("probes_only", e);
  for (uint32_t r = 1; r < 4; ++r) {
    // Each side's offset is within half its best round trip.
    const double bound = static_cast<double>(BestProbeRtt(job, r) + BestProbeRtt(job, 0)) / 2;
    for (int64_t t : job.EvalTimes(config.iterations - 1)) {
      EXPECT_LE(std::fabs(ErrorAt(aligner, job, r, t)), bound) << "rank " << r;
    }
    EXPECT_EQ(aligner.Estimate(r).source(), v1::CLOCK_SOURCE_PROBES);
    EXPECT_GT(aligner.Estimate(r).probe_samples(), 0u);
  }
  // The reference clock is Unix time: the reference device maps onto it
  // within its half round trip.
  const int64_t t = job.EvalTimes(config.iterations - 1).front();
  EXPECT_NEAR(static_cast<double>(aligner.ToReference(0, job.Local(0, t))), static_cast<double>(t),
              static_cast<double>(BestProbeRtt(job, 0)) / 2);
  EXPECT_TRUE(aligner.Estimate(0).reference());
}

TEST_F(ClockAlignerTest, ProbeOnlyDeviceAmongCollectives) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 30;
  config.probe_only_rank = 3;
  config.probe_period_ns = 100'000'000;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  RunJob(job, aligner, kMeasureFrom, {3});
  const Errors e = RunSeeds(config, 10, 4, {3});
  Print("with_probe_only_device_10_seeds", e);
  EXPECT_LE(e.Quantile(0.99), kBudgetNs);
  EXPECT_EQ(aligner.Estimate(3).source(), v1::CLOCK_SOURCE_PROBES);
  EXPECT_EQ(aligner.Estimate(2).source(), v1::CLOCK_SOURCE_COLLECTIVES);
  const double bound = static_cast<double>(BestProbeRtt(job, 3) + BestProbeRtt(job, 0)) / 2;
  EXPECT_LE(std::fabs(ErrorAt(aligner, job, 3, job.EvalTimes(29).front())), bound);
}

TEST_F(ClockAlignerTest, ClockJumpDetectedReanchoredReportedOnce) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 50;
  config.jump_rank = 2;
  config.jump_iteration = 25;
  config.jump_ns = 5'000'000;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  std::vector<v1::ClockJump> jumps;
  Errors after;
  for (int k = 0; k < config.iterations; ++k) {
    job.FeedThrough(k, &aligner);
    for (auto& j : aligner.TakeJumps()) jumps.push_back(j);
    if (k < 35) continue;
    for (int64_t t : job.EvalTimes(k))
      after.abs_ns.push_back(std::fabs(ErrorAt(aligner, job, 2, t)));
  }
  Print("after_jump", after);
  ASSERT_EQ(jumps.size(), 1u);
  EXPECT_EQ(jumps[0].rank(), 2u);
  EXPECT_NEAR(static_cast<double>(jumps[0].jump_ns()), 5e6, 200e3);
  EXPECT_EQ(jumps[0].detected_by(), "collectives");
  EXPECT_EQ(aligner.Estimate(2).jumps(), 1u);
  EXPECT_EQ(aligner.Estimate(1).jumps(), 0u);
  EXPECT_LE(after.Quantile(0.99), kBudgetNs);
}

TEST_F(ClockAlignerTest, DeadRankDoesNotBlockOthers) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 40;
  config.dead_rank = 3;
  config.dead_after = 10;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  const Errors e = RunJob(job, aligner, 20, {3});
  Print("dead_rank", e);
  EXPECT_LE(e.Quantile(0.99), kBudgetNs);
  // Once the group went max_pending_instances on without rank 3, instances
  // stop waiting for it: every instance still counts for the others.
  EXPECT_EQ(aligner.Estimate(1).collective_samples(), 40u);
  EXPECT_EQ(aligner.Estimate(3).collective_samples(), 11u);
}

TEST_F(ClockAlignerTest, ClosedRankReleasesItsInstancesAtOnce) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 20;
  config.dead_rank = 3;
  config.dead_after = 5;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  for (int k = 0; k < config.iterations; ++k) {
    job.FeedThrough(k, &aligner);
    if (k == 5) aligner.OnDeviceClosed(3);
  }
  EXPECT_EQ(aligner.Estimate(1).collective_samples(), 20u);
}

TEST_F(ClockAlignerTest, OutOfOrderArrivalAcrossRanks) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 40;
  SyntheticClockJob job(config, &strings_);
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  Errors e;
  // Blocks of 5 iterations arrive rank by rank, the highest rank first.
  for (int block = 0; block < 8; ++block) {
    const int last = block * 5 + 4;
    for (int r = 3; r >= 0; --r) job.FeedRankThrough(r, last, &aligner);
    if (block < 2) continue;
    for (uint32_t r = 1; r < 4; ++r) {
      for (int k = block * 5; k <= last; ++k) {
        for (int64_t t : job.EvalTimes(k))
          e.abs_ns.push_back(std::fabs(ErrorAt(aligner, job, r, t)));
      }
    }
  }
  Print("out_of_order", e);
  EXPECT_EQ(aligner.late_events(), 0u);
  EXPECT_EQ(aligner.Estimate(1).collective_samples(), 40u);
  EXPECT_LE(e.Quantile(0.99), kBudgetNs);
}

DeviceEvent Collective(uint32_t group, uint64_t sequence, int64_t end) {
  DeviceEvent e;
  e.kind = v1::EVENT_KIND_COLLECTIVE;
  e.detail = v1::COLLECTIVE_KIND_ALL_REDUCE;
  e.group = group;
  e.group_sequence = sequence;
  e.start_ns = end - 1'000'000;
  e.end_ns = end;
  return e;
}

TEST_F(ClockAlignerTest, UnknownGroupMembershipIsLearned) {
  const uint32_t group = strings_.Intern("custom_group");
  ClockAligner aligner(&groups_);
  const int64_t offsets[3] = {0, 7'000'000, -3'000'000};
  for (uint64_t k = 0; k < 20; ++k) {
    const int64_t t = 1'000'000'000 + static_cast<int64_t>(k) * 50'000'000;
    for (uint32_t r = 0; r < 3; ++r) aligner.Add(r, Collective(group, k, t + offsets[r]));
  }
  EXPECT_FALSE(groups_.MembershipKnown(group));
  for (uint32_t r = 1; r < 3; ++r) {
    const int64_t t = 2'000'000'000;
    EXPECT_NEAR(static_cast<double>(aligner.ToReference(r, t + offsets[r])),
                static_cast<double>(aligner.ToReference(0, t)), 1'000)
        << r;
    EXPECT_GE(aligner.Estimate(r).collective_samples(), 18u);
  }
}

TEST_F(ClockAlignerTest, OperatorsAndUnknownRanksAreIgnored) {
  ClockAligner aligner(&groups_);
  DeviceEvent op;
  op.kind = v1::EVENT_KIND_OPERATOR;
  op.start_ns = 5;
  op.end_ns = 10;
  aligner.Add(4, op);
  EXPECT_EQ(aligner.ToReference(4, 123), 123);    // nothing known: identity
  EXPECT_EQ(aligner.ToReference(99, 456), 456);   // never seen
  EXPECT_EQ(aligner.Report().devices_size(), 0);  // operators do not register devices
  EXPECT_EQ(aligner.Estimate(4).source(), v1::CLOCK_SOURCE_UNSPECIFIED);
}

TEST_F(ClockAlignerTest, ReferenceIsLowestRankSeenUnlessSet) {
  ClockAligner aligner(&groups_);
  aligner.AddProbe(2, 1'000, 500, 510, 1'030);
  aligner.AddProbe(1, 1'000, 700, 710, 1'030);
  EXPECT_EQ(aligner.reference(), 1u);
  EXPECT_TRUE(aligner.Estimate(1).reference());
  EXPECT_FALSE(aligner.Estimate(2).reference());
  // Unix = local + 510 on rank 2 and local + 310 on rank 1 (round trips 20).
  EXPECT_EQ(aligner.ToReference(1, 10'000), 10'310);
  EXPECT_EQ(aligner.ToReference(2, 10'000), 10'510);
  aligner.SetReference(2);
  EXPECT_EQ(aligner.reference(), 2u);
  EXPECT_TRUE(aligner.Estimate(2).reference());
  EXPECT_EQ(aligner.Report().devices_size(), 2);
}

TEST_F(ClockAlignerTest, NominalOffsetIsThePrior) {
  ClockAligner aligner(&groups_);
  aligner.SetNominalOffset(0, 1'000'000);
  aligner.SetNominalOffset(1, 3'000'000);
  EXPECT_EQ(aligner.ToReference(0, 50), 1'000'050);
  EXPECT_EQ(aligner.ToReference(1, 50), 3'000'050);
}

TEST_F(ClockAlignerTest, SendRecvAloneAlignsAPair) {
  // Two devices, sends both ways 5 us in flight, rank 1 ahead by 2 ms.
  const uint32_t group = strings_.Intern("pg:pp[0,1]");
  ClockAligner aligner(&groups_);
  const int64_t offset = 2'000'000;
  for (uint64_t n = 0; n < 40; ++n) {
    const int64_t t = 1'000'000'000 + static_cast<int64_t>(n) * 20'000'000;
    DeviceEvent send, recv;
    send.kind = recv.kind = v1::EVENT_KIND_COLLECTIVE;
    send.group = recv.group = group;
    send.group_sequence = recv.group_sequence = n;
    send.detail = v1::COLLECTIVE_KIND_SEND;
    recv.detail = v1::COLLECTIVE_KIND_RECV;
    // 0 -> 1 at t, then 1 -> 0 at t + 10 ms.
    send.peer = 1;
    send.start_ns = t;
    send.end_ns = t + 5'000;
    recv.peer = 0;
    recv.start_ns = t - 1'000 + offset;
    recv.end_ns = t + 5'000 + offset;
    aligner.Add(1, recv);
    aligner.Add(0, send);
    send.peer = 0;
    send.start_ns = t + 10'000'000 + offset;
    send.end_ns = send.start_ns + 5'000;
    recv.peer = 1;
    recv.start_ns = t + 9'000'000;
    recv.end_ns = t + 10'005'000;
    aligner.Add(1, send);
    aligner.Add(0, recv);
  }
  EXPECT_EQ(aligner.Estimate(1).source(), v1::CLOCK_SOURCE_POINT_TO_POINT);
  EXPECT_NEAR(static_cast<double>(aligner.ToReference(1, 2'000'000'000 + offset)),
              static_cast<double>(aligner.ToReference(0, 2'000'000'000)), 1'000);
  EXPECT_EQ(aligner.Estimate(1).p2p_constraints(), 80u);
}

}  // namespace
}  // namespace trainscope::collector
