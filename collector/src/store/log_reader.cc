#include "trainscope/collector/store/log_reader.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "segment_scanner.h"

namespace trainscope::collector {

absl::StatusOr<LogReader> LogReader::Open(const std::filesystem::path& dir) {
  absl::StatusOr<std::vector<std::pair<uint64_t, std::filesystem::path>>> files =
      ListSegmentFiles(dir);
  if (!files.ok()) return files.status();
  if (files->empty()) {
    return absl::NotFoundError(
        absl::StrCat("log directory ", dir.string(), " holds no segment-*.tslog file"));
  }
  std::vector<std::filesystem::path> segments;
  segments.reserve(files->size());
  for (auto& [index, path] : *files) segments.push_back(std::move(path));
  return LogReader(std::move(segments));
}

absl::Status LogReader::ForEach(const std::function<bool(const trainscope::v1::LogRecord&)>& fn,
                                ReadStats* stats) const {
  ReadStats local;
  ReadStats& out = stats != nullptr ? *stats : local;
  for (size_t i = 0; i < segments_.size(); ++i) {
    absl::StatusOr<SegmentScan> scan = ScanSegmentFile(segments_[i], fn);
    if (!scan.ok()) return scan.status();
    ++out.segments;
    out.records += scan->records;
    out.corrupt_records += scan->damage.size();
    for (DamagedRange& range : scan->damage) out.damage.push_back(std::move(range));
    if (scan->stopped) return absl::OkStatus();
    if (scan->tail_bytes == 0) continue;
    if (i + 1 == segments_.size()) {
      // A collector may be writing this frame right now: it is the end, not damage.
      out.torn_tail_bytes += scan->tail_bytes;
    } else {
      ++out.corrupt_records;
      out.damage.push_back({.segment = segments_[i],
                            .offset = scan->valid_end,
                            .length = scan->tail_bytes,
                            .problem = scan->tail_problem});
    }
  }
  return absl::OkStatus();
}

}  // namespace trainscope::collector
