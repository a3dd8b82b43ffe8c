#include "collector_process.h"

#include <signal.h>

#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::testing {

CollectorProcess::CollectorProcess(std::filesystem::path work_dir,
                                   std::vector<std::string> extra_flags)
    : work_dir_(std::move(work_dir)),
      data_dir_(work_dir_ / "data"),
      extra_flags_(std::move(extra_flags)) {
  agents_address_ = absl::StrCat("127.0.0.1:", PickFreePort());
  feed_endpoint_ = absl::StrCat("tcp://127.0.0.1:", PickFreePort());
  snapshot_endpoint_ = absl::StrCat("tcp://127.0.0.1:", PickFreePort());
}

absl::Status CollectorProcess::Start() {
  const std::filesystem::path port_file = work_dir_ / "ports";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv = {TRAINSCOPE_COLLECTOR_BIN,
                                   "--listen=" + agents_address_,
                                   "--feed=" + feed_endpoint_,
                                   "--snapshot=" + snapshot_endpoint_,
                                   "--data-dir=" + data_dir_.string(),
                                   "--port-file=" + port_file.string()};
  argv.insert(argv.end(), extra_flags_.begin(), extra_flags_.end());
  process_ = std::make_unique<Subprocess>(argv, work_dir_ / absl::StrCat("collector-", ++starts_));
  if (absl::Status s = process_->Start(); !s.ok()) return s;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!std::filesystem::exists(port_file)) {
    if (!process_->running() || process_->Wait(absl::ZeroDuration()).ok()) {
      return absl::InternalError(absl::StrCat("collector exited at start:\n", Output()));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("collector not ready in 30 s:\n", Output()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

void CollectorProcess::Kill(int signal) {
  if (process_) process_->Signal(signal);
}

absl::StatusOr<int> CollectorProcess::Wait(absl::Duration timeout) {
  if (!process_) return absl::FailedPreconditionError("collector was never started");
  return process_->Wait(timeout);
}

std::string CollectorProcess::Output() const {
  std::string all;
  for (int i = 1; i <= starts_; ++i) {
    const auto prefix = work_dir_ / absl::StrCat("collector-", i);
    absl::StrAppend(&all, "--- collector incarnation ", i, " stdout:\n",
                    ReadFile(prefix.string() + ".out"), "--- stderr:\n",
                    ReadFile(prefix.string() + ".err"));
  }
  return all;
}

std::vector<LoadgenSummary> ParseLoadgenSummaries(const std::string& text) {
  std::vector<LoadgenSummary> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "{") || !absl::ConsumeSuffix(&line, "}")) continue;
    LoadgenSummary summary;
    for (absl::string_view field : absl::StrSplit(line, ',')) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits(':', 1));
      absl::string_view key = absl::StripAsciiWhitespace(kv.first);
      absl::ConsumePrefix(&key, "\"");
      absl::ConsumeSuffix(&key, "\"");
      absl::string_view value = absl::StripAsciiWhitespace(kv.second);
      double number = 0;
      if (value == "true") number = 1;
      else if (value == "false") number = 0;
      else if (!absl::SimpleAtod(value, &number)) continue;  // strings (job name)
      summary[std::string(key)] = number;
    }
    out.push_back(std::move(summary));
  }
  return out;
}

absl::StatusOr<std::map<uint32_t, LoggedStream>> ReadJobLog(const std::filesystem::path& job_dir) {
  auto reader = collector::LogReader::Open(job_dir);
  if (!reader.ok()) return reader.status();
  std::map<uint32_t, LoggedStream> streams;
  collector::ReadStats stats;
  absl::Status status = reader->ForEach(
      [&](const v1::LogRecord& record) {
        if (record.has_batch()) {
          LoggedStream& s = streams[record.batch().rank()];
          const uint64_t seq = record.batch().batch().sequence();
          if (seq <= s.last_sequence) ++s.duplicate_or_unordered_batches;
          s.last_sequence = std::max(s.last_sequence, seq);
          s.events += record.batch().batch().kind_size();
          ++s.batches;
        } else if (record.has_stream_closed() && record.stream_closed().goodbye()) {
          streams[record.stream_closed().rank()].goodbye = true;
        }
        return true;
      },
      &stats);
  if (!status.ok()) return status;
  if (stats.corrupt_records > 0) {
    return absl::DataLossError(absl::StrCat(stats.corrupt_records, " corrupt records in ",
                                            job_dir.string()));
  }
  return streams;
}

}  // namespace trainscope::testing
