// A deterministic made-up training job for demos, tests and benchmarks:
// data-parallel replicas (optionally split into pipeline stages joined by
// send/recv), each step data wait -> forward -> backward -> all-reduce ->
// optimizer, one device optionally a straggler (slower compute, so the
// others wait in the all-reduce) with a matching alert. With `gpu`, every
// device also runs on a GPU: each compute operator launches a kernel on
// stream 7, each all-reduce an NCCL kernel on stream 20 (it ends when the
// last device's kernel has started, plus the transfer), each step begins
// with a host-to-device copy on stream 9, and the steps carry device time
// and their top kernels. Every step carries its per-pair traffic (a ring per
// all-reduce, the pipeline's sends), optionally with one slow link and its
// slow_link alert; hosts optionally sit in racks.
//
// Usage:
//   SyntheticJob job = GenerateSyntheticJob({.devices = 8, .straggler = 5});
//   marey.AddOperators(ToRecords(job.operators, &names));  // see viewer_data
//
// Threading: pure function.
#ifndef TRAINSCOPE_VIEWER_SYNTHETIC_JOB_H_
#define TRAINSCOPE_VIEWER_SYNTHETIC_JOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct SyntheticJobOptions {
  std::string job_id = "synthetic";
  uint32_t devices = 4;
  uint32_t stages = 1;  // devices are split evenly; must divide devices
  uint32_t hosts = 2;
  uint32_t steps = 6;
  uint32_t compute_ops_per_step = 40;  // forward + backward
  uint32_t collectives_per_step = 3;
  std::optional<uint32_t> straggler = 2;
  double straggler_factor = 1.7;
  uint32_t straggler_from_step = 2;
  int64_t clock_skew_ns = 40'000;  // raw clocks differ by multiples of this
  uint64_t seed = 1;
  int64_t start_ns = 1'700'000'000'000'000'000;
  bool gpu = false;
  // (sender, receiver): this link's transfers take slow_link_factor times as
  // long in the steps' per-pair traffic (the ring of each all-reduce).
  std::optional<std::pair<uint32_t, uint32_t>> slow_link;
  double slow_link_factor = 8;
  // Hosts split evenly into this many racks ("rack-K" in DeviceInfo::rack);
  // 0: no rack labels.
  uint32_t racks = 0;
};

using SyntheticJob = JobData;

SyntheticJob GenerateSyntheticJob(const SyntheticJobOptions& options);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_SYNTHETIC_JOB_H_
