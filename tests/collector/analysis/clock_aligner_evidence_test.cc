// ClockAligner never invents a skew: ranks of one clock domain (an import's
// files, one host's agents) are exactly the reference clock without any
// probe; NCCL kernel ends align hosts where the collectives' CPU records
// (launches) cannot; a fit on too little evidence says so, with drift 0 and
// its uncertainty, instead of a clamped drift; collective ends that do not
// describe one clock fall back to the device's own wall clock.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/synthetic_clock_job.h"
#include "gtest/gtest.h"
#include "testing/event_batch_builder.h"
#include "trainscope/collector/analysis/clock_aligner.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kBase = 1'682'725'897'000'000'000;  // an imported trace's Unix-time clock

DeviceEvent Collective(v1::EventKind kind, uint32_t group, uint64_t sequence, int64_t end) {
  DeviceEvent e;
  e.kind = kind;
  e.detail = v1::COLLECTIVE_KIND_ALL_REDUCE;
  e.group = group;
  e.group_sequence = sequence;
  e.start_ns = end - 5 * kMs;
  e.end_ns = end;
  return e;
}

class ClockAlignerEvidenceTest : public ::testing::Test {
 protected:
  // Two ranks unless a test says more: the default group is the world.
  void SetUp() override { groups_.set_world_size(2); }

  JobStrings strings_;
  GroupDirectory groups_{&strings_};
  const uint32_t group_ = strings_.Intern("default_pg");
};

// ---------------------------------------------------------------------------
// One clock domain.

TEST_F(ClockAlignerEvidenceTest, OneImportDomainWithoutProbesIsExactlyTheReferenceClock) {
  // Four ranks of one host, imported: no probes, the trace's clock is Unix
  // time (nominal offset 0). Their collectives' CPU records end up to 87 ms
  // apart (launches), their NCCL kernels within microseconds: neither may
  // move a rank off the clock they all read.
  groups_.set_world_size(4);
  ClockAligner aligner(&groups_);
  for (uint32_t r = 0; r < 4; ++r) {
    aligner.SetClockDomain(r, "trace@import:job");
    aligner.SetNominalOffset(r, 0);
  }
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> launch(0, 87 * kMs);
  std::uniform_int_distribution<int64_t> jitter(0, 3 * kUs);
  for (uint64_t k = 0; k < 30; ++k) {
    const int64_t t = kBase + static_cast<int64_t>(k) * 200 * kMs;
    for (uint32_t r = 0; r < 4; ++r) {
      aligner.Add(r, Collective(v1::EVENT_KIND_COLLECTIVE, group_, k, t - launch(rng)));
      aligner.Add(r, Collective(v1::EVENT_KIND_GPU_COLLECTIVE, group_, k, t + jitter(rng)));
    }
  }
  const v1::ClockReport report = aligner.Report();
  ASSERT_EQ(report.devices_size(), 4);
  for (const v1::ClockEstimate& c : report.devices()) {
    EXPECT_EQ(c.offset_to_reference_device_ns(), 0) << c.rank();
    EXPECT_EQ(c.drift_to_reference_device_ppm(), 0) << c.rank();
    EXPECT_EQ(c.offset_ns(), 0) << c.rank();  // Unix time, as the trace says
    EXPECT_FALSE(c.insufficient_evidence()) << c.rank();
    EXPECT_EQ(c.domain_leader(), 0u) << c.rank();
    EXPECT_EQ(c.collective_samples(), 30u) << c.rank();  // counted, not needed
    EXPECT_EQ(c.gpu_collective_samples(), 30u) << c.rank();
    if (c.rank() > 0) EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_CLOCK_DOMAIN) << c.rank();
    EXPECT_EQ(aligner.ToReference(c.rank(), kBase + 123), kBase + 123) << c.rank();
  }
}

// Hello as `trainscope import` writes it: the trace's clock, Unix time.
v1::Hello ImportHello(uint32_t rank, uint32_t world, const std::string& domain_id) {
  v1::Hello hello;
  hello.set_job_id("imported");
  hello.set_rank(rank);
  hello.set_world_size(world);
  hello.set_host("import");
  v1::ClockDomain* clock = hello.add_clock_domains();
  clock->set_name("trace");
  clock->set_realtime_minus_domain_ns(0);
  clock->set_domain_id(domain_id);
  return hello;
}

// One step per batch: an operator, then an all-reduce whose CPU record ends
// `late` after the true end (what a launch record looks like across ranks).
v1::EventBatch ImportedStep(int step, int64_t late) {
  const int64_t t0 = kBase + step * 100 * kMs;
  testing::EventBatchBuilder b(static_cast<uint64_t>(step + 1));
  b.Operator("aten::mm", t0, t0 + 50 * kMs, v1::OPERATOR_SCOPE_FORWARD);
  b.Collective("record_param_comms", t0 + 50 * kMs, t0 + 90 * kMs + late,
               v1::COLLECTIVE_KIND_ALL_REDUCE, "", static_cast<uint64_t>(step + 1), 4096);
  b.StepMark(t0 + 100 * kMs, static_cast<uint64_t>(step + 1));
  return b.Build();
}

TEST_F(ClockAlignerEvidenceTest, ImportHellosOfOneHostShareOneClockThroughTheAnalyzer) {
  // The analysis turns Hello's domain into the aligner's: ranks 1..3 end
  // their records 29, 58 and 87 ms late, and still read rank 0's clock.
  for (const std::string domain : {"host:node-7", "import:imported"}) {
    JobAnalyzer analyzer({}, {});
    for (uint32_t r = 0; r < 4; ++r) analyzer.OnStreamOpened(ImportHello(r, 4, domain), 0);
    for (int step = 0; step < 12; ++step) {
      for (uint32_t r = 0; r < 4; ++r) analyzer.OnBatch(r, ImportedStep(step, r * 29 * kMs), 0);
    }
    const v1::ClockReport report = analyzer.Clocks();
    ASSERT_EQ(report.devices_size(), 4) << domain;
    for (const v1::ClockEstimate& c : report.devices()) {
      EXPECT_EQ(c.clock_domain(), "trace@" + domain);
      EXPECT_EQ(c.offset_to_reference_device_ns(), 0) << domain << " rank " << c.rank();
      EXPECT_EQ(c.drift_to_reference_device_ppm(), 0) << domain << " rank " << c.rank();
      EXPECT_FALSE(c.insufficient_evidence()) << domain << " rank " << c.rank();
    }
  }
  // Told apart (one domain per file), the same records are fitted: rank 3's
  // records end 87 ms late every step, which is what a skew looks like.
  JobAnalyzer apart({}, {});
  for (uint32_t r = 0; r < 4; ++r) {
    apart.OnStreamOpened(ImportHello(r, 4, "import:imported:rank" + std::to_string(r)), 0);
  }
  for (int step = 0; step < 12; ++step) {
    for (uint32_t r = 0; r < 4; ++r) apart.OnBatch(r, ImportedStep(step, r * 29 * kMs), 0);
  }
  std::map<uint32_t, v1::ClockEstimate> by_rank;
  const v1::ClockReport report = apart.Clocks();
  for (const v1::ClockEstimate& c : report.devices()) by_rank[c.rank()] = c;
  EXPECT_NEAR(static_cast<double>(by_rank[3].offset_to_reference_device_ns()), -87e6, 1e3);
}

// ---------------------------------------------------------------------------
// NCCL kernels across hosts.

struct Errors {
  std::vector<double> abs_ns;
  double Quantile(double q) const {
    if (abs_ns.empty()) return 0;
    std::vector<double> v = abs_ns;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  }
};

// Two hosts of two ranks; every collective as a launch record and an NCCL
// kernel. `gpu`: whether the kernels reach the aligner.
Errors RunTwoHosts(uint64_t seed, bool gpu, ClockAligner::Options options = {},
                   v1::ClockReport* last = nullptr) {
  SyntheticClockJob::Config config;
  config.world_size = 4;
  config.iterations = 60;
  config.host = {0, 0, 1, 1};
  config.gpu_collectives = true;
  config.straggler = 3;
  config.seed = seed;
  JobStrings strings;
  GroupDirectory groups(&strings);
  groups.set_world_size(4);
  SyntheticClockJob job(config, &strings);
  ClockAligner aligner(&groups, options);
  job.DeclareDomains(&aligner);
  Errors errors;
  for (int k = 0; k < config.iterations; ++k) {
    if (gpu) {
      job.FeedThrough(k, &aligner);
    } else {
      // The same job with its kernels taken out.
      for (uint32_t r = 0; r < 4; ++r) {
        for (const auto& item : job.streams()[r]) {
          if (item.iteration != k || item.event.kind == v1::EVENT_KIND_GPU_COLLECTIVE) continue;
          aligner.Add(r, item.event);
        }
      }
    }
    if (k < 10) continue;
    for (uint32_t r = 1; r < 4; ++r) {
      for (int64_t t : job.EvalTimes(k)) {
        errors.abs_ns.push_back(std::fabs(static_cast<double>(
            aligner.ToReference(r, job.Local(r, t)) - aligner.ToReference(0, job.Local(0, t)))));
      }
    }
  }
  if (last != nullptr) *last = aligner.Report();
  return errors;
}

TEST_F(ClockAlignerEvidenceTest, NcclKernelEndsAlignHostsWhereLaunchRecordsCannot) {
  Errors gpu, cpu;
  v1::ClockReport report;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Errors g = RunTwoHosts(seed, /*gpu=*/true, {}, &report);
    gpu.abs_ns.insert(gpu.abs_ns.end(), g.abs_ns.begin(), g.abs_ns.end());
    const Errors c = RunTwoHosts(seed, /*gpu=*/false);
    cpu.abs_ns.insert(cpu.abs_ns.end(), c.abs_ns.begin(), c.abs_ns.end());
  }
  std::printf("[clock] nccl_kernels_two_hosts: p50 %.1f us, p99 %.1f us (n=%zu)\n",
              gpu.Quantile(0.5) / 1e3, gpu.Quantile(0.99) / 1e3, gpu.abs_ns.size());
  std::printf("[clock] launch_records_only_two_hosts: p50 %.1f us, p99 %.1f us\n",
              cpu.Quantile(0.5) / 1e3, cpu.Quantile(0.99) / 1e3);
  // Kernels end within 2 us (half-normal) of each other: a few us after the
  // fit. The launch records scatter by a millisecond and more (arrivals, a
  // 30 ms straggler on the other host): the same job without the kernels is
  // far off, so the kernels are what aligned it.
  EXPECT_LE(gpu.Quantile(0.99), 5'000);
  EXPECT_GE(cpu.Quantile(0.5), 100'000);
  ASSERT_EQ(report.devices_size(), 4);
  const v1::ClockEstimate& host1 = report.devices(2);
  EXPECT_EQ(host1.source(), v1::CLOCK_SOURCE_GPU_COLLECTIVES);
  EXPECT_EQ(host1.gpu_collective_samples(), 60u);
  EXPECT_EQ(host1.collective_samples(), 60u);
  EXPECT_FALSE(host1.insufficient_evidence());
  EXPECT_LE(host1.uncertainty_ns(), 5'000);
  EXPECT_EQ(report.devices(3).source(), v1::CLOCK_SOURCE_CLOCK_DOMAIN);
  EXPECT_EQ(report.devices(1).offset_to_reference_device_ns(), 0);
}

TEST_F(ClockAlignerEvidenceTest, KernelsOfOneGroupAreInstancesApartFromItsCpuRecords) {
  // CPU records and kernels share group and sequence numbers; rank 1's
  // records end 40 ms before its kernels, which end with rank 0's. Mixed
  // into one instance they would read as a 20 ms skew.
  ClockAligner aligner(&groups_);
  const int64_t skew = 3 * kMs;  // rank 1's clock ahead
  for (uint64_t k = 0; k < 20; ++k) {
    const int64_t t = kBase + static_cast<int64_t>(k) * 100 * kMs;
    aligner.Add(0, Collective(v1::EVENT_KIND_COLLECTIVE, group_, k, t - kMs));
    aligner.Add(1, Collective(v1::EVENT_KIND_COLLECTIVE, group_, k, t - 40 * kMs + skew));
    aligner.Add(0, Collective(v1::EVENT_KIND_GPU_COLLECTIVE, group_, k, t));
    aligner.Add(1, Collective(v1::EVENT_KIND_GPU_COLLECTIVE, group_, k, t + skew));
  }
  const v1::ClockEstimate c = aligner.Estimate(1);
  EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_GPU_COLLECTIVES);
  EXPECT_EQ(c.offset_to_reference_device_ns(), -skew);
  EXPECT_EQ(c.gpu_collective_samples(), 20u);
  EXPECT_EQ(c.collective_samples(), 20u);
}

// ---------------------------------------------------------------------------
// Insufficient evidence.

// Rank 1 (its own clock, `skew` ahead) against rank 0 on NCCL kernel ends;
// rank 1's end of instance k is off by extra[k].
ClockAligner::Options DefaultOptions() { return ClockAligner::Options(); }

v1::ClockEstimate PairEstimate(GroupDirectory* groups, uint32_t group, int64_t skew,
                               int64_t spacing, const std::vector<int64_t>& extra,
                               bool nominal = false) {
  ClockAligner aligner(groups);
  if (nominal) {
    aligner.SetNominalOffset(0, 0);
    aligner.SetNominalOffset(1, 0);
  }
  for (size_t k = 0; k < extra.size(); ++k) {
    const int64_t t = kBase + static_cast<int64_t>(k) * spacing;
    aligner.Add(0, Collective(v1::EVENT_KIND_GPU_COLLECTIVE, group, k, t));
    aligner.Add(1, Collective(v1::EVENT_KIND_GPU_COLLECTIVE, group, k, t + skew + extra[k]));
  }
  return aligner.Estimate(1);
}

TEST_F(ClockAlignerEvidenceTest, OneSampleStatesItsOffsetWithTheAssumedScatter) {
  const v1::ClockEstimate c = PairEstimate(&groups_, group_, 5 * kMs, 0, {0});
  EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_GPU_COLLECTIVES);
  EXPECT_TRUE(c.insufficient_evidence());
  EXPECT_EQ(c.offset_to_reference_device_ns(), -5 * kMs);
  EXPECT_EQ(c.drift_to_reference_device_ppm(), 0);
  // One kernel end: what one NCCL kernel's end may be off by.
  EXPECT_DOUBLE_EQ(c.uncertainty_ns(), DefaultOptions().gpu_collective_scatter_ns);
}

TEST_F(ClockAlignerEvidenceTest, FewSamplesNeverGiveAClampedDrift) {
  // Four ends 20 ms apart drifting 100 us each: a 5000 ppm "drift" over
  // 60 ms, which a plain fit clamped to 1000 ppm. Too few samples to say.
  const v1::ClockEstimate c =
      PairEstimate(&groups_, group_, 5 * kMs, 20 * kMs, {0, 100 * kUs, 200 * kUs, 300 * kUs});
  EXPECT_TRUE(c.insufficient_evidence());
  EXPECT_EQ(c.drift_to_reference_device_ppm(), 0);
  EXPECT_EQ(c.drift_ppm(), 0);
  // Flat through the mean (150 us off 5 ms), uncertain by the scatter
  // (129 us / sqrt(4)) and what 100 ppm could do over 30 ms.
  EXPECT_NEAR(static_cast<double>(c.offset_to_reference_device_ns()), -5.15e6, 1e3);
  EXPECT_NEAR(c.uncertainty_ns(), std::hypot(129'099 / 2.0, 3'000), 500);
}

TEST_F(ClockAlignerEvidenceTest, ImplausibleDriftIsInsufficientEvidenceNotClamped) {
  // Ten ends over 0.9 s on a perfect 5000 ppm line: no clock drifts that
  // much (mismatched instances do), so no drift is stated.
  std::vector<int64_t> extra;
  for (int k = 0; k < 10; ++k) extra.push_back(k * 500 * kUs);
  const v1::ClockEstimate c = PairEstimate(&groups_, group_, 5 * kMs, 100 * kMs, extra);
  EXPECT_TRUE(c.insufficient_evidence());
  EXPECT_EQ(c.drift_to_reference_device_ppm(), 0);
  // The ends scatter by 1.5 ms around any one offset: 1.5 ms / sqrt(10).
  EXPECT_GT(c.uncertainty_ns(), 400 * kUs);
}

TEST_F(ClockAlignerEvidenceTest, EnoughSamplesStateTheDrift) {
  // 40 ends over 3.9 s, rank 1 running 50 ppm fast, +-2 us of jitter.
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> jitter(-2 * kUs, 2 * kUs);
  std::vector<int64_t> extra;
  for (int k = 0; k < 40; ++k) extra.push_back(k * 100 * kMs * 50 / 1'000'000 + jitter(rng));
  const v1::ClockEstimate c = PairEstimate(&groups_, group_, 5 * kMs, 100 * kMs, extra);
  EXPECT_FALSE(c.insufficient_evidence());
  // Reference minus rank 1 falls by 50 ns per ms of rank 1's clock.
  EXPECT_NEAR(c.drift_to_reference_device_ppm(), -50, 3);
  EXPECT_LE(c.uncertainty_ns(), 2 * kUs);
  EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_GPU_COLLECTIVES);
}

TEST_F(ClockAlignerEvidenceTest, EndsThatFitNoOffsetFallBackToTheOwnWallClock) {
  // Separate clocks, no probes, records paired wrongly (ends +-50 ms apart
  // at random): no offset fits them better than the wall clocks' NTP
  // millisecond, so none is invented.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> wrong(-50 * kMs, 50 * kMs);
  std::vector<int64_t> extra;
  for (int k = 0; k < 12; ++k) extra.push_back(wrong(rng));
  const v1::ClockEstimate c = PairEstimate(&groups_, group_, 0, 100 * kMs, extra, /*nominal=*/true);
  EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_NOMINAL);
  EXPECT_TRUE(c.insufficient_evidence());
  EXPECT_EQ(c.offset_to_reference_device_ns(), 0);
  EXPECT_EQ(c.drift_to_reference_device_ppm(), 0);
  EXPECT_NEAR(c.uncertainty_ns(), std::sqrt(2.0) * DefaultOptions().nominal_uncertainty_ns, 1);
  EXPECT_EQ(c.gpu_collective_samples(), 12u);
}

TEST_F(ClockAlignerEvidenceTest, NoSignalAtAllIsInsufficientEvidence) {
  ClockAligner aligner(&groups_);
  aligner.SetNominalOffset(0, 0);
  aligner.SetNominalOffset(1, 2 * kMs);  // its Hello's wall clock reading
  const v1::ClockEstimate ref = aligner.Estimate(0);
  EXPECT_TRUE(ref.reference());
  EXPECT_FALSE(ref.insufficient_evidence());
  const v1::ClockEstimate c = aligner.Estimate(1);
  EXPECT_EQ(c.source(), v1::CLOCK_SOURCE_NOMINAL);
  EXPECT_TRUE(c.insufficient_evidence());
  // Reference clock minus rank 1's: rank 1's reads 2 ms behind Unix time.
  EXPECT_EQ(c.offset_to_reference_device_ns(), 2 * kMs);
}

}  // namespace
}  // namespace trainscope::collector
