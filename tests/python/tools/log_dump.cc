#include "log_dump.h"

#include <string>
#include <utility>

#include "trainscope/collector/store/log_reader.h"

namespace trainscope::testing {

absl::StatusOr<std::vector<LoggedEvent>> ReadLoggedEvents(const std::filesystem::path& job_dir) {
  absl::StatusOr<collector::LogReader> reader = collector::LogReader::Open(job_dir);
  if (!reader.ok()) return reader.status();
  std::vector<LoggedEvent> events;
  absl::Status decode_error;
  absl::Status status = reader->ForEach(
      [&](const v1::LogRecord& record) {
        if (!record.has_batch() || !record.batch().refused_reason().empty()) return true;
        absl::StatusOr<std::vector<agent::DecodedEvent>> decoded =
            agent::DecodeEventBatch(record.batch().batch());
        if (!decoded.ok()) {
          decode_error = decoded.status();
          return false;
        }
        for (agent::DecodedEvent& e : *decoded) {
          events.push_back(LoggedEvent{record.batch().rank(), std::move(e)});
        }
        return true;
      },
      nullptr);
  if (!status.ok()) return status;
  if (!decode_error.ok()) return decode_error;
  return events;
}

}  // namespace trainscope::testing
