// What /proc says about processes, for `trainscope attach` and `detach`:
// whether a pid is a live Python process with PyTorch loaded that we may
// trace, and which processes a --match pattern names.
//
// Usage:
//   ProcessTable table;  // or ProcessTable("/some/fake/proc") in tests
//   absl::StatusOr<ProcessInfo> info = table.Inspect(1234);
//   absl::Status ok = table.CheckInjectable(*info);  // python + torch + traceable
//   absl::StatusOr<std::vector<ProcessInfo>> ranks = table.MatchTrainingProcesses("train.py");
//
// Threading: stateless apart from the root path; reads /proc on the calling
// thread. What it reads can change at any moment (processes come and go), so
// callers treat every answer as a snapshot.
#ifndef TRAINSCOPE_CLI_PROCESS_TABLE_H_
#define TRAINSCOPE_CLI_PROCESS_TABLE_H_

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainscope::cli {

struct ProcessInfo {
  pid_t pid = 0;
  pid_t parent = 0;
  uid_t uid = 0;        // real uid
  char state = '?';     // R, S, D, T, Z, ... from /proc/PID/status
  pid_t tracer = 0;     // TracerPid: a debugger already attached
  std::string name;     // comm
  std::string cmdline;  // arguments joined by spaces
  std::string exe;      // readlink of /proc/PID/exe; empty when unreadable
  bool maps_readable = false;
  std::string maps_error;  // why /proc/PID/maps could not be read
  bool python = false;     // exe is python* or maps a libpython
  bool torch = false;      // maps a libtorch*

  // "1234 (python3 train.py)" for messages.
  std::string Describe() const;
};

class ProcessTable {
 public:
  explicit ProcessTable(std::filesystem::path proc_root = "/proc");

  // NOT_FOUND naming the pid when there is no such process.
  absl::StatusOr<ProcessInfo> Inspect(pid_t pid) const;

  // OK when `info` is a live Python process with torch loaded that this
  // process may trace; otherwise FAILED_PRECONDITION / PERMISSION_DENIED with
  // a message that says which check failed and what to do.
  absl::Status CheckInjectable(const ProcessInfo& info) const;

  // Every pid in the table, ascending.
  std::vector<pid_t> Pids() const;

  // The training processes behind `pattern`: processes whose command line or
  // name contains it, plus their descendants, keeping only Python processes
  // with torch loaded and dropping launchers (a candidate with a candidate
  // below it, e.g. the parent of torch.multiprocessing.spawn or torchrun's
  // agent). This process and its ancestors never match. NOT_FOUND, listing
  // what matched, when nothing is left.
  absl::StatusOr<std::vector<ProcessInfo>> MatchTrainingProcesses(const std::string& pattern) const;

 private:
  std::filesystem::path root_;
};

// Parses a pid argument: a positive whole number.
absl::StatusOr<pid_t> ParsePid(const std::string& text);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_PROCESS_TABLE_H_
