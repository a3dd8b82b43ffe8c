// Runs trainscope.remote.attach_from_outside / detach_from_outside inside
// live Python processes that were started without trainscope, with gdb.
//
// How: gdb attaches with shared-library symbols off (loading libtorch's
// symbols takes ~10 s), loads only libc's, and calls
//   Py_AddPendingCall(PyRun_SimpleString, strdup("<bootstrap>"))
// then detaches: the target is stopped for about a second. The interpreter
// runs the bootstrap on its main thread at the next safe point between two
// bytecodes, holding the GIL, so nothing is run re-entrantly inside the
// interpreter (unlike PyGILState_Ensure + PyRun_SimpleString from wherever
// gdb stopped the thread) and the gdb call itself never blocks. The
// bootstrap reads its config from a private directory (mode 0700, owned by
// the target's user; no secret on gdb's command line), imports
// trainscope.remote from the plugin's python dir, calls it and writes
// status.json there; the injector waits for that file. The bootstrap checks
// a deadline, so a target whose main thread is stuck in C code never acts
// on a request the CLI has given up on.
//
// Usage:
//   PythonInjector injector({.gdb = "gdb", .timeout = absl::Seconds(10)});
//   std::vector<InjectionOutcome> outcomes = injector.Run(targets, request);
//
// Threading: Run blocks the calling thread; targets are injected in
// parallel (one gdb each).
#ifndef TRAINSCOPE_CLI_PYTHON_INJECTOR_H_
#define TRAINSCOPE_CLI_PYTHON_INJECTOR_H_

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "trainscope/cli/process_table.h"

namespace trainscope::cli {

struct InjectionRequest {
  enum class Action { kAttach, kDetach };
  Action action = Action::kAttach;
  std::filesystem::path python_dir;  // put on sys.path to import trainscope.remote
  // Passed to attach_from_outside as its config dict (collector, job, token,
  // dormant); the injector adds action, python_dir and deadline_unix.
  google::protobuf::Struct config;
};

struct InjectionOutcome {
  pid_t pid = 0;
  absl::Status status;              // OK: the call ran and returned
  google::protobuf::Struct result;  // what remote.* returned (status.json), when OK
};

class PythonInjector {
 public:
  struct Options {
    std::string gdb = "gdb";
    absl::Duration timeout = absl::Seconds(10);  // for everything, all targets together
    std::filesystem::path temp_dir = "/tmp";     // where the private directories go
    const std::atomic<bool>* stop = nullptr;     // raised: stop waiting (gdb is still reaped)
  };

  explicit PythonInjector(Options options) : options_(std::move(options)) {}

  // One outcome per target, in order. Targets must have passed
  // ProcessTable::CheckInjectable.
  std::vector<InjectionOutcome> Run(const std::vector<ProcessInfo>& targets,
                                    const InjectionRequest& request) const;

  // The one-line-per-statement Python source handed to PyRun_SimpleString:
  // runs <dir>/bootstrap.py in a fresh namespace and swallows every exception
  // (an exception escaping a pending call would surface in the target's
  // training loop).
  static std::string PendingCallSource(const std::filesystem::path& dir, pid_t pid);
  // The contents of bootstrap.py.
  static const char* BootstrapSource();
  // gdb's command line for one target.
  std::vector<std::string> GdbArgv(pid_t pid, const std::string& source) const;
  // Reads gdb's output: OK when Py_AddPendingCall returned 0, else an error
  // that says what went wrong (EPERM and ptrace_scope, missing symbols, ...).
  static absl::Status InterpretGdbOutput(pid_t pid, const std::string& output);
  // Makes gdb call getpid() in a throwaway `sleep` first: some gdb and CPU
  // pairs (gdb 13 with AMX) cannot restore the registers after a call and
  // leave the process broken, which must never happen to a training job.
  // FAILED_PRECONDITION naming the cause then; OK otherwise (also when the
  // canary cannot run: the real injection reports its own errors).
  absl::Status CheckGdbCanCall() const;

 private:
  Options options_;
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_PYTHON_INJECTOR_H_
