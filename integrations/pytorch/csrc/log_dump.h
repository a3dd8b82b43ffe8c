// Reads the events of a job's durable log back, for the plugin's tests
// (Python protobuf is not installed for /usr/bin/python3 here).
//
// Usage:
//   absl::StatusOr<std::vector<LoggedEvent>> events = ReadLoggedEvents(data_dir / "jobs" / job);
//
// Batches the collector refused are skipped.
//
// Threading: a pure function (reading files).
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_LOG_DUMP_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_LOG_DUMP_H_

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::pytorch {

struct LoggedEvent {
  uint32_t rank = 0;
  agent::DecodedEvent event;
};

absl::StatusOr<std::vector<LoggedEvent>> ReadLoggedEvents(const std::filesystem::path& job_dir);

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_LOG_DUMP_H_
