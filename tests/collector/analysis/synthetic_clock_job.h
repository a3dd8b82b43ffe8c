// A synthetic training job with known clocks, for measuring ClockAligner's
// error against the truth: every device's clock has an injected offset,
// drift and optionally one jump; collectives complete with jitter (and rare
// late wake-ups); one rank may straggle; sends/receives follow a pipeline
// schedule; probes have asymmetric random delays. True time is Unix time.
// With gpu_collectives, each data-parallel collective is what a GPU job
// records: a CPU record that ends at its (asynchronous) launch, wherever the
// rank arrived, and an NCCL kernel that ends with every other rank's.
//
// Usage:
//   SyntheticClockJob job(config, &strings);
//   for (int k = 0; k < config.iterations; ++k) {
//     job.FeedThrough(k, &aligner);  // ranks' batches interleaved at random
//     for (int64_t t : job.EvalTimes(k)) ... job.Local(rank, t) ...
//   }
//
// Threading: not thread-safe.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_CLOCK_JOB_H_
#define TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_CLOCK_JOB_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "trainscope/collector/analysis/clock_aligner.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {

class SyntheticClockJob {
 public:
  enum class Layout {
    kDataParallel,  // every rank in the default group, one AllReduce per iteration
    kPipeline,      // 2 stages x 2 replicas: stage 0 = {0,2}, stage 1 = {1,3}
    kProbesOnly,    // no communication at all
  };
  struct Config {
    Layout layout = Layout::kDataParallel;
    uint32_t world_size = 8;
    int iterations = 40;
    int64_t iteration_ns = 100'000'000;
    int operators_per_collective = 50;
    uint64_t seed = 1;
    double max_offset_ns = 50e6;
    double max_drift_ppm = 100;
    // Collective completion: |N(0, jitter)| per participant, and now and
    // then a late wake-up of 100..500 us.
    double jitter_ns = 15'000;
    double late_wakeup_probability = 0.02;
    int probe_only_rank = -1;  // data parallel: takes part in no collective
    int straggler = -1;        // arrives this much later to every collective
    int64_t straggler_delay_ns = 30'000'000;
    // Send -> receive: fixed latency plus exponential jitter.
    int64_t p2p_latency_ns = 5'000;
    double p2p_jitter_ns = 10'000;
    // Probes: 0 = none; one-way delays fixed + exponential (asymmetric).
    int64_t probe_period_ns = 0;
    int64_t probe_one_way_ns = 50'000;
    double probe_jitter_ns = 100'000;
    // A rank that stops reporting after this iteration (never closes).
    int dead_rank = -1;
    int dead_after = 0;
    // One clock jump of jump_ns on jump_rank at the start of jump_iteration.
    int jump_rank = -1;
    int jump_iteration = 0;
    int64_t jump_ns = 0;
    // Clock domains: ranks with the same host index >= 0 read one clock (the
    // first such rank's offset and drift); missing or -1: a clock of its own.
    std::vector<int> host;
    // Data parallel: each collective as a launch record plus an NCCL kernel
    // (EVENT_KIND_GPU_COLLECTIVE, same group and sequence) whose end has
    // |N(0, gpu_jitter_ns)| of jitter.
    bool gpu_collectives = false;
    double gpu_jitter_ns = 2'000;
  };
  struct Item {
    int iteration = 0;
    bool probe = false;
    DeviceEvent event;
    int64_t probe_send_unix = 0, agent_receive = 0, agent_send = 0, probe_receive_unix = 0;
  };

  SyntheticClockJob(const Config& config, JobStrings* strings);

  const Config& config() const { return config_; }
  // Device clock at true (Unix) time.
  int64_t Local(uint32_t rank, int64_t true_ns) const;
  int64_t injected_offset_ns(uint32_t rank) const { return offset_ns_[rank]; }
  // The rank's clock domain for ClockAligner::SetClockDomain: "host-<h>",
  // or empty for a clock of its own.
  std::string Domain(uint32_t rank) const;
  // Declares every rank's domain to the aligner (what the Hellos do).
  void DeclareDomains(ClockAligner* aligner) const;
  // True times to evaluate the alignment at in iteration k: its start, its
  // middle and its collectives' completions.
  const std::vector<int64_t>& EvalTimes(int iteration) const { return eval_times_[iteration]; }
  // Whether the rank still reports in iteration k.
  bool Alive(uint32_t rank, int iteration) const;
  const std::vector<std::vector<Item>>& streams() const { return streams_; }

  // Feeds every rank's items up to and including iteration k, taking ranks
  // in random order, a random batch of up to `max_batch` items at a time.
  void FeedThrough(int iteration, ClockAligner* aligner, int max_batch = 16);
  // Feeds the items up to iteration k of the given rank only.
  void FeedRankThrough(uint32_t rank, int iteration, ClockAligner* aligner);

  static constexpr int64_t kStartUnixNs = 1'700'000'000'000'000'000;

 private:
  void AddEvent(uint32_t rank, int iteration, int64_t true_start, int64_t true_end,
                v1::EventKind kind, uint32_t detail, uint32_t group, uint64_t sequence,
                int32_t peer);
  void AddOperators(uint32_t rank, int iteration, int64_t from, int64_t to, int count);
  int64_t Jitter();
  void BuildDataParallel();
  void BuildPipeline();
  void BuildProbes();
  void Feed(uint32_t rank, const Item& item, ClockAligner* aligner) const;

  Config config_;
  JobStrings* strings_;
  std::mt19937_64 rng_;
  std::vector<int64_t> offset_ns_;
  std::vector<double> drift_ppm_;
  std::vector<std::vector<Item>> streams_;
  std::vector<size_t> cursor_;
  std::vector<std::vector<int64_t>> eval_times_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_CLOCK_JOB_H_
