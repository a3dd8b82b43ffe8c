// Command line of trainscope-loadgen (see kLoadgenUsage).
//
// Usage:
//   absl::StatusOr<LoadgenFlags> flags = ParseLoadgenFlags(argc, argv);
//   if (!flags.ok()) { print flags.status().message(); exit 2; }
//
// Threading: pure functions.
#ifndef TRAINSCOPE_BENCH_LOADGEN_LOADGEN_FLAGS_H_
#define TRAINSCOPE_BENCH_LOADGEN_LOADGEN_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace trainscope::loadgen {

inline constexpr char kLoadgenUsage[] =
    R"(usage: trainscope-loadgen --job J [options]

Simulates training processes: K agent streams in this process, each recording a
realistic mix of events (operators, one all_reduce and a step mark every ~50
events, a memory counter per step) and streaming it to a collector.

  --collector HOST:PORT   collector address (default 127.0.0.1:7070)
  --job J                 job id (required)
  --rank R                rank of the first stream (default 0)
  --world-size W          world size (default rank + streams)
  --streams K             agent streams, ranks R..R+K-1 (default 1)
  --events N              Record calls per stream (default 100000)
  --run-for-ms MS         record for this long instead of --events
  --rate EPS              events per second per stream; 0 = as fast as possible (default 0)
  --threads T             producer threads per stream (default 1)
  --token TOK             job token
  --restart-count C       launcher restart count (default 0)
  --memory-mb M           agent memory budget in MiB (default 64)
  --flush-timeout-ms MS   shutdown deadline (default 5000)
  --summary FILE          write the JSON summary lines here (default stdout)
  --dormant               start dormant: record only once the collector enables it
  --help                  this text

Prints one JSON object per stream:
  {"job":..,"rank":R,"attempted":A,"recorded":..,"acked":..,"refused":..,
   "dropped_ring_full":..,"dropped_buffer_full":..,"dropped_shutdown":..,
   "sampled_out":..,"batches_acked":..,"reconnects":..,"elapsed_s":..,"halted":false}
Exit status: 0 done, 2 bad flags, 3 halted by the collector (prints "halted: REASON").
)";

struct LoadgenFlags {
  bool help = false;
  std::string collector = "127.0.0.1:7070";
  std::string job;
  uint32_t rank = 0;
  uint32_t world_size = 0;  // 0: rank + streams
  uint32_t streams = 1;
  uint64_t events = 100000;
  uint64_t run_for_ms = 0;  // 0: use events
  double rate = 0;
  uint32_t threads = 1;
  std::string token;
  uint32_t restart_count = 0;
  uint64_t memory_mb = 64;
  uint64_t flush_timeout_ms = 5000;
  std::string summary;
  bool dormant = false;
};

// Accepts "--flag value" and "--flag=value". Errors name the flag.
absl::StatusOr<LoadgenFlags> ParseLoadgenFlags(int argc, const char* const* argv);

}  // namespace trainscope::loadgen

#endif  // TRAINSCOPE_BENCH_LOADGEN_LOADGEN_FLAGS_H_
