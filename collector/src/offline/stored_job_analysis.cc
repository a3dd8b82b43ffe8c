#include "trainscope/collector/offline/stored_job_analysis.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::collector {

absl::StatusOr<std::unique_ptr<JobAnalyzer>> AnalyzeStoredJob(const std::filesystem::path& data_dir,
                                                              absl::string_view job_id,
                                                              JobAnalyzerOptions options,
                                                              JobAnalyzerOutputs outputs,
                                                              JobLogState* log_state) {
  const std::filesystem::path dir = data_dir / "jobs" / std::string(job_id);
  absl::StatusOr<LogReader> reader = LogReader::Open(dir);
  if (!reader.ok()) {
    return absl::Status(reader.status().code(),
                        absl::StrCat("job ", job_id, ": ", reader.status().message()));
  }
  auto analyzer = std::make_unique<JobAnalyzer>(options, std::move(outputs));
  // Ticks follow the log's own clock, so silent devices time out as they did live.
  int64_t last_tick = 0;
  absl::Status read = reader->ForEach(
      [&](const trainscope::v1::LogRecord& record) {
        analyzer->OnLogRecord(record);
        if (log_state != nullptr) FoldLogRecord(record, log_state);
        if (record.logged_unix_ns() - last_tick >= 200'000'000) {
          last_tick = record.logged_unix_ns();
          analyzer->Tick(last_tick);
        }
        return true;
      },
      nullptr);
  if (!read.ok()) return read;
  analyzer->Finish();
  return analyzer;
}

}  // namespace trainscope::collector
