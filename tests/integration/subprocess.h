// A child process for integration tests: started with posix_spawn, stdout and
// stderr captured to files, waited for with a deadline, killed on destruction.
//
// Usage:
//   Subprocess collector({kCollectorBin, "--listen", addr}, dir / "collector");
//   ASSERT_TRUE(collector.Start().ok());
//   collector.Signal(SIGKILL);
//   auto exit = collector.Wait(absl::Seconds(10));
//
// Threading: one instance belongs to one test thread.
#ifndef TRAINSCOPE_TESTS_INTEGRATION_SUBPROCESS_H_
#define TRAINSCOPE_TESTS_INTEGRATION_SUBPROCESS_H_

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace trainscope::testing {

class Subprocess {
 public:
  // Output goes to `<output_prefix>.out` and `<output_prefix>.err`.
  Subprocess(std::vector<std::string> argv, std::filesystem::path output_prefix);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  absl::Status Start();
  void Signal(int signal);
  // The exit code (128 + signal when killed), or DEADLINE_EXCEEDED.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  bool running() const { return pid_ > 0 && !exit_code_.has_value(); }
  pid_t pid() const { return pid_; }

  std::string Stdout() const;
  std::string Stderr() const;
  const std::vector<std::string>& argv() const { return argv_; }

 private:
  std::vector<std::string> argv_;
  std::filesystem::path output_prefix_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// Reads a whole file; empty when it does not exist.
std::string ReadFile(const std::filesystem::path& path);

// A TCP port on 127.0.0.1 that was free a moment ago (bound, then released).
int PickFreePort();

// A fresh, empty directory under the test's temp dir.
std::filesystem::path MakeTempDir(const std::string& name);

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_INTEGRATION_SUBPROCESS_H_
