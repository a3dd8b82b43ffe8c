#include "loadgen_flags.h"

#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/base/status_macros.h"

namespace trainscope::loadgen {

namespace {

constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

base::ArgParser MakeParser() {
  base::ArgParser parser(
      "trainscope-loadgen",
      "Simulates training processes: K agent streams in this process, each recording a\n"
      "realistic mix of events (operators, one all_reduce and a step mark every ~50\n"
      "events, a memory counter per step) and streaming it to a collector.");
  parser.AddFlag("collector", "HOST:PORT", "collector address", "127.0.0.1:7070");
  parser.AddFlag("job", "J", "job id (required)");
  parser.AddFlag("rank", "R", "rank of the first stream", "0");
  parser.AddFlag("world-size", "W", "world size (default: rank + streams)");
  parser.AddFlag("streams", "K", "agent streams, ranks R..R+K-1 (at most 4096)", "1");
  parser.AddFlag("events", "N", "Record calls per stream", "100000");
  parser.AddFlag("run-for-ms", "MS", "record for this long instead of --events");
  parser.AddFlag("rate", "EPS",
                 "events per second per stream; 0 = as fast as possible. A producer more than "
                 "20 ms behind (a starved thread) resumes the pace from then on instead of "
                 "catching up in a burst; the summary counts these pacing_slips",
                 "0");
  parser.AddFlag("threads", "T", "producer threads per stream (at most 256)", "1");
  parser.AddFlag("token", "TOK", "job token");
  parser.AddFlag("restart-count", "C", "launcher restart count", "0");
  parser.AddFlag("memory-mb", "M", "agent memory budget in MiB (at most 1048576)", "64");
  parser.AddFlag("flush-timeout-ms", "MS", "shutdown deadline", "5000");
  parser.AddFlag("summary", "FILE", "write the JSON summary lines here (default: stdout)");
  parser.AddBoolFlag("dormant", "start dormant: record only once the collector enables it");
  parser.AddFlag("clock-offset-ms", "MS",
                 "shift every timestamp the agents send by MS (negative: back), as a host "
                 "with another clock; at most one hour either way",
                 "0");
  parser.AddFlag(
      "distinct-names", "N",
      "operators cycle through N distinct names \"op_0\"..\"op_<N-1>\" (each "
      "interned on first use, split among all streams and threads) instead of the "
      "fixed aten:: list; an agent's string table has a cap (about a million strings), so use more "
      "streams for more names: the summary counts names past that cap; 0: off",
      "0");
  parser.AddEpilog(
      "Prints one JSON object per stream:\n"
      "  {\"job\":..,\"rank\":R,\"attempted\":A,\"recorded\":..,\"acked\":..,\"refused\":..,\n"
      "   \"dropped_ring_full\":..,\"dropped_buffer_full\":..,\"dropped_shutdown\":..,\n"
      "   \"sampled_out\":..,\"batches_acked\":..,\"reconnects\":..,\"pacing_slips\":..,\n"
      "   \"elapsed_s\":..,\"halted\":false}\n"
      "  (with --distinct-names also \"names_interned\":..,\"names_over_agent_cap\":..: the\n"
      "   stream's names, and those its agent's string table had no room for, which went\n"
      "   out as \"(string table full)\")\n"
      "Exit status: 0 done, 2 bad flags, 3 halted by the collector (prints \"halted: REASON\"),\n"
      "4 the collector refused a stream for good (wrong job secret, another world size, ...:\n"
      "the reason on stderr; it stops at once instead of retrying).");
  return parser;
}

// Reads the whole-number flag `name` into `*out` when given.
template <typename T>
absl::Status ReadInt(const base::ParsedArgs& args, const char* name, int64_t min, int64_t max,
                     T* out) {
  ASSIGN_OR_RETURN(std::optional<int64_t> value, args.Int(name, min, max));
  if (value.has_value()) *out = static_cast<T>(*value);
  return absl::OkStatus();
}

absl::Status NonEmpty(const base::ParsedArgs& args, const char* name, const char* expected,
                      std::string* out) {
  std::optional<std::string> value = args.Value(name);
  if (!value.has_value()) return absl::OkStatus();
  if (value->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected ", expected, ", got ''"));
  }
  *out = *value;
  return absl::OkStatus();
}

}  // namespace

std::string LoadgenUsage() { return MakeParser().Usage(); }

absl::StatusOr<LoadgenFlags> ParseLoadgenFlags(int argc, const char* const* argv) {
  ASSIGN_OR_RETURN(base::ParsedArgs args, MakeParser().Parse(argc, argv));
  LoadgenFlags flags;
  if (args.help_requested()) {
    flags.help = true;
    return flags;
  }
  RETURN_IF_ERROR(NonEmpty(args, "collector", "HOST:PORT", &flags.collector));
  flags.job = args.Value("job").value_or("");
  flags.token = args.Value("token").value_or("");
  RETURN_IF_ERROR(NonEmpty(args, "summary", "a file name", &flags.summary));
  RETURN_IF_ERROR(ReadInt(args, "rank", 0, kMaxU32, &flags.rank));
  RETURN_IF_ERROR(ReadInt(args, "world-size", 1, kMaxU32, &flags.world_size));
  RETURN_IF_ERROR(ReadInt(args, "streams", 1, 4096, &flags.streams));
  RETURN_IF_ERROR(ReadInt(args, "events", 0, kMaxI64, &flags.events));
  RETURN_IF_ERROR(ReadInt(args, "run-for-ms", 1, kMaxI64, &flags.run_for_ms));
  RETURN_IF_ERROR(ReadInt(args, "threads", 1, 256, &flags.threads));
  RETURN_IF_ERROR(ReadInt(args, "restart-count", 0, kMaxU32, &flags.restart_count));
  RETURN_IF_ERROR(ReadInt(args, "memory-mb", 1, 1 << 20, &flags.memory_mb));
  RETURN_IF_ERROR(ReadInt(args, "flush-timeout-ms", 0, kMaxI64, &flags.flush_timeout_ms));
  ASSIGN_OR_RETURN(std::optional<double> rate,
                   args.Double("rate", 0, std::numeric_limits<double>::max()));
  flags.rate = rate.value_or(0);
  flags.dormant = args.Bool("dormant");
  RETURN_IF_ERROR(ReadInt(args, "clock-offset-ms", -3'600'000, 3'600'000, &flags.clock_offset_ms));
  RETURN_IF_ERROR(ReadInt(args, "distinct-names", 0, kMaxI64, &flags.distinct_names));

  if (flags.job.empty()) return absl::InvalidArgumentError("--job: required (see --help)");
  if (flags.world_size == 0) flags.world_size = flags.rank + flags.streams;
  if (static_cast<uint64_t>(flags.rank) + flags.streams > flags.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--world-size ", flags.world_size, ": expected at least --rank + --streams = ",
                     static_cast<uint64_t>(flags.rank) + flags.streams));
  }
  if (args.Has("events") && args.Has("run-for-ms")) {
    return absl::InvalidArgumentError("--events and --run-for-ms: give one or the other");
  }
  return flags;
}

}  // namespace trainscope::loadgen
