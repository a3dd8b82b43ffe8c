// What a subcommand may touch of the process: its output streams, the
// environment and the stop flag raised by SIGINT/SIGTERM. Passing these in
// (rather than using std::cout/getenv directly) lets tests run a subcommand
// in-process and read what it printed.
//
// Threading: the streams belong to the thread running the subcommand; `stop`
// may be set from a signal handler or another thread.
#ifndef TRAINSCOPE_CLI_COMMAND_CONTEXT_H_
#define TRAINSCOPE_CLI_COMMAND_CONTEXT_H_

#include <atomic>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "trainscope/client/environment.h"

namespace trainscope::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the operation failed: collector said no, unreachable
inline constexpr int kExitUsage = 2;   // bad command line

// Replaces the process with `argv` (searched on PATH) after setting the
// variables in `set_env`; returns an errno value only when that failed.
using ExecFunction =
    std::function<int(const std::vector<std::string>& argv,
                      const std::vector<std::pair<std::string, std::string>>& set_env)>;

struct CommandContext {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // Returns the variable's value, or nullopt when unset or empty.
  client::EnvLookup env = [](std::string_view) { return std::optional<std::string>(); };
  const std::atomic<bool>* stop = nullptr;  // may be null: never stopped from outside
  absl::TimeZone time_zone = absl::UTCTimeZone();
  // "user@host", recorded as requested_by on commands that change a job.
  std::string requested_by = "unknown";
  // How `trainscope run` starts its program; null: the real execvp. Tests
  // record the call instead of replacing themselves.
  ExecFunction exec = nullptr;

  bool stopped() const { return stop != nullptr && stop->load(std::memory_order_relaxed); }
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_COMMAND_CONTEXT_H_
