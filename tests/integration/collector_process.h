// The real trainscope-collector binary on loopback for integration tests, with
// fixed ports so that it can be killed and restarted where agents expect it.
//
// Threading: one instance belongs to one test thread.
#ifndef TRAINSCOPE_TESTS_INTEGRATION_COLLECTOR_PROCESS_H_
#define TRAINSCOPE_TESTS_INTEGRATION_COLLECTOR_PROCESS_H_

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "subprocess.h"

namespace trainscope::testing {

class CollectorProcess {
 public:
  explicit CollectorProcess(std::filesystem::path work_dir, std::vector<std::string> extra_flags = {});

  // Starts (or restarts) the collector and waits until its port file appears.
  absl::Status Start();
  void Kill(int signal);
  absl::StatusOr<int> Wait(absl::Duration timeout);

  const std::string& agents_address() const { return agents_address_; }
  const std::string& feed_endpoint() const { return feed_endpoint_; }
  const std::string& snapshot_endpoint() const { return snapshot_endpoint_; }
  const std::filesystem::path& data_dir() const { return data_dir_; }
  std::filesystem::path job_dir(const std::string& job) const { return data_dir_ / "jobs" / job; }
  // Stdout and stderr of every incarnation so far.
  std::string Output() const;

 private:
  std::filesystem::path work_dir_;
  std::filesystem::path data_dir_;
  std::vector<std::string> extra_flags_;
  std::string agents_address_, feed_endpoint_, snapshot_endpoint_;
  int starts_ = 0;
  std::unique_ptr<Subprocess> process_;
};

// One line of trainscope-loadgen's --summary output, keyed by field name.
using LoadgenSummary = std::map<std::string, double>;

// Parses the flat JSON objects (one per line) that trainscope-loadgen writes.
std::vector<LoadgenSummary> ParseLoadgenSummaries(const std::string& text);

// Per-stream content of a job's durable log.
struct LoggedStream {
  uint64_t events = 0;
  uint64_t batches = 0;
  uint64_t duplicate_or_unordered_batches = 0;  // sequence not strictly increasing
  uint64_t last_sequence = 0;
  bool goodbye = false;
};

// Reads a job's log: streams keyed by rank (one incarnation per rank expected).
absl::StatusOr<std::map<uint32_t, LoggedStream>> ReadJobLog(const std::filesystem::path& job_dir);

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_INTEGRATION_COLLECTOR_PROCESS_H_
