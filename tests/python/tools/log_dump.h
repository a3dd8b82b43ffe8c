// Reads the events of a job's durable log back, for the plugin's tests
// (Python protobuf is not installed for /usr/bin/python3 here). A test tool
// (dump_log_events) rather than part of the extension, so that the plugin
// shipped into training processes does not link the collector's store.
//
// Usage:
//   absl::StatusOr<std::vector<LoggedEvent>> events = ReadLoggedEvents(data_dir / "jobs" / job);
//
// Batches the collector refused are skipped.
//
// Threading: a pure function (reading files).
#ifndef TRAINSCOPE_TESTS_PYTHON_TOOLS_LOG_DUMP_H_
#define TRAINSCOPE_TESTS_PYTHON_TOOLS_LOG_DUMP_H_

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::testing {

struct LoggedEvent {
  uint32_t rank = 0;
  agent::DecodedEvent event;
};

absl::StatusOr<std::vector<LoggedEvent>> ReadLoggedEvents(const std::filesystem::path& job_dir);

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_PYTHON_TOOLS_LOG_DUMP_H_
