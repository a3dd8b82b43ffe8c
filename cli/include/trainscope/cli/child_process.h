// A child process with a deadline: its stdout and stderr are captured
// together, and it is killed (with everything it started) when it overruns.
// Used to drive gdb for `trainscope attach`, where a hung debugger must
// never hang the CLI.
//
// Usage:
//   absl::StatusOr<ChildProcess> gdb = ChildProcess::Start({"gdb", "-batch", ...});
//   ChildResult result = gdb->Wait(absl::Now() + absl::Seconds(10));
//   if (result.timed_out) ...; use result.exit_code, result.output
//
// Several children may run at once: Start them all, then Wait on each.
//
// Threading: one thread owns a ChildProcess. Movable, not copyable; the
// destructor kills and reaps a child that was not waited for.
#ifndef TRAINSCOPE_CLI_CHILD_PROCESS_H_
#define TRAINSCOPE_CLI_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace trainscope::cli {

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal or timed out
  int signal = 0;      // the signal that ended it, if any
  bool timed_out = false;
  std::string output;  // stdout and stderr interleaved, at most kMaxOutputBytes
};

class ChildProcess {
 public:
  static constexpr size_t kMaxOutputBytes = 1 << 20;

  // Forks and execs argv[0] (searched on PATH) in its own process group.
  // Fails when it cannot be started (e.g. argv[0] not found: NOT_FOUND).
  static absl::StatusOr<ChildProcess> Start(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Reads its output until it exits or `deadline` passes; past the deadline
  // its whole process group gets SIGKILL. Call once.
  ChildResult Wait(absl::Time deadline);

 private:
  ChildProcess(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  void KillAndReap();

  pid_t pid_ = -1;
  int output_fd_ = -1;
};

// Whether `program` can be executed: a path with '/' that is executable, or
// a name found on PATH.
bool ProgramOnPath(const std::string& program);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_CHILD_PROCESS_H_
