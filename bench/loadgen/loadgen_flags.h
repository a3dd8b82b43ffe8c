// Command line of trainscope-loadgen (`trainscope-loadgen --help` prints
// LoadgenUsage()), parsed with trainscope's one flag parser
// (trainscope/base/arg_parser.h): `--flag value`, `--flag=value`, '-' or '_'
// in names, errors that name the flag and what it expects.
//
// Usage:
//   absl::StatusOr<LoadgenFlags> flags = ParseLoadgenFlags(argc, argv);
//   if (!flags.ok()) { print flags.status().message(); exit 2; }
//   if (flags->help) { print LoadgenUsage(); exit 0; }
//
// Threading: pure functions.
#ifndef TRAINSCOPE_BENCH_LOADGEN_LOADGEN_FLAGS_H_
#define TRAINSCOPE_BENCH_LOADGEN_LOADGEN_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace trainscope::loadgen {

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
  // AgentOptions::test_clock_offset_ns: every timestamp the agents send is
  // shifted, as if the streams ran on a host with another clock.
  int64_t clock_offset_ms = 0;
  // > 0: operators cycle through this many distinct names "op_<i>", split
  // among all producers of this process (0: the fixed list of aten:: names).
  uint64_t distinct_names = 0;
};

// argv[0] is the program. Errors name the flag and say what was expected.
absl::StatusOr<LoadgenFlags> ParseLoadgenFlags(int argc, const char* const* argv);

// The --help text: every flag with its default, the output and exit codes.
std::string LoadgenUsage();

}  // namespace trainscope::loadgen

#endif  // TRAINSCOPE_BENCH_LOADGEN_LOADGEN_FLAGS_H_
