#include "trainscope/collector/store/recovery_audit.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;

uint64_t Minus(uint64_t promised, uint64_t found) {
  return promised > found ? promised - found : 0;
}

// The segment rows and the stream rows measure the same loss from two sides,
// each as of its last update: a collector killed between two updates of the
// segment rows still knows each rank's count. The larger is the better bound.
void Reconcile(LossTotals* totals) {
  uint64_t by_rank = 0;
  for (const auto& [rank, events] : totals->events_by_rank) by_rank += events;
  totals->events = std::max(totals->events, by_rank);
}

void Add(const IndexedLoss& loss, LossTotals* totals) {
  if (loss.rank >= 0) {
    totals->events_by_rank[static_cast<uint32_t>(loss.rank)] += loss.events;
    return;
  }
  totals->records += loss.records;
  totals->events += loss.events;
  totals->bytes += loss.bytes;
  if (loss.problem.rfind("segment missing", 0) == 0) ++totals->segments_missing;
}

std::string Describe(const IndexedLoss& loss) {
  std::string what =
      loss.rank >= 0
          ? absl::StrCat("rank ", loss.rank, ": ", loss.events, " events (", loss.bytes,
                         " bytes) the index counted are not in the log")
          : absl::StrCat(loss.segment, ": ", loss.problem, ": ", loss.records, " records, ",
                         loss.events, " events, ", loss.bytes, " bytes lost");
  return what;
}

}  // namespace

std::string DescribeLoss(const LossTotals& totals) {
  if (totals.segments_missing == 0 && totals.records == 0 && totals.events == 0 &&
      totals.bytes == 0) {
    return "nothing lost";
  }
  std::string out = absl::StrCat(totals.events, " events, ", totals.records, " records, ",
                                 totals.bytes, " bytes lost");
  if (totals.segments_missing > 0) {
    absl::StrAppend(&out, " (", totals.segments_missing, " segment",
                    totals.segments_missing == 1 ? "" : "s", " missing)");
  }
  return out;
}

trainscope::v1::LogRecovery RecoveryToProto(const RecoveryReport& report, absl::Time now) {
  trainscope::v1::LogRecovery out;
  out.set_segments(report.segments);
  out.set_records(report.records);
  out.set_corrupt_records(report.corrupt_records);
  out.set_torn_bytes_cut(report.torn_bytes_cut);
  // Without an index only this reopening is known.
  const LossTotals& lost =
      report.lost_ever.segments_missing + report.lost_ever.records + report.lost_ever.events +
                  report.lost_ever.bytes >
              0
          ? report.lost_ever
          : report.lost;
  out.set_segments_missing(lost.segments_missing);
  out.set_records_lost(lost.records);
  out.set_events_lost(lost.events);
  out.set_bytes_lost(lost.bytes);
  out.set_index_rebuilt(report.index_rebuilt);
  for (const std::string& message : report.messages) out.add_messages(message);
  out.set_recovered_unix_ns(absl::ToUnixNanos(now));
  return out;
}

bool WorthShowing(const RecoveryReport& report) {
  return report.records > 0 || report.corrupt_records > 0 || report.torn_bytes_cut > 0 ||
         report.index_rebuilt || !report.messages.empty() ||
         DescribeLoss(report.lost_ever) != "nothing lost" ||
         DescribeLoss(report.lost) != "nothing lost";
}

absl::Status AuditRecovery(const std::string& job_id, const JobLog& log, LogIndex* index,
                           absl::Time now, RecoveryReport* report) {
  if (index == nullptr) return absl::OkStatus();
  const int64_t now_ns = absl::ToUnixNanos(now);
  std::map<std::string, SegmentInfo> on_disk;  // by file name: the data dir may have moved
  for (const SegmentInfo& segment : log.segments()) {
    on_disk[segment.path.filename().string()] = segment;
  }
  const std::set<std::string> chain_gaps(report->missing_segments.begin(),
                                         report->missing_segments.end());

  absl::StatusOr<std::vector<IndexedSegment>> indexed = index->ListSegments(job_id);
  if (!indexed.ok()) return indexed.status();
  std::vector<IndexedLoss> found;
  std::set<std::string> quantified;
  for (const IndexedSegment& row : *indexed) {
    const std::string name = fs::path(row.path).filename().string();
    auto it = on_disk.find(name);
    if (it == on_disk.end()) {
      found.push_back({.found_unix_ns = now_ns,
                       .segment = name,
                       .problem = chain_gaps.count(name) ? "segment missing from the chain"
                                                         : "segment missing (deleted?)",
                       .records = row.records,
                       .events = row.events,
                       .bytes = row.bytes});
      quantified.insert(name);
      if (absl::Status s = index->DeleteSegment(row.path); !s.ok()) return s;
      continue;
    }
    const SegmentInfo& disk = it->second;
    if (disk.records < row.records) {
      found.push_back(
          {.found_unix_ns = now_ns,
           .segment = name,
           .problem = disk.records == 0
                          ? absl::StrCat("segment emptied (", disk.bytes,
                                         " bytes left; truncated?)")
                          : absl::StrCat("segment holds ", disk.records, " of ", row.records,
                                         " indexed records (truncated or damaged)"),
           .records = row.records - disk.records,
           .events = Minus(row.events, disk.events),
           .bytes = Minus(row.bytes, disk.bytes)});
    }
  }
  // A gap stays in the chain: report it once (an earlier reopening may have).
  absl::StatusOr<std::vector<IndexedLoss>> earlier = index->ListLosses(job_id);
  if (!earlier.ok()) return earlier.status();
  for (const IndexedLoss& loss : *earlier) {
    if (!loss.segment.empty()) quantified.insert(loss.segment);
  }
  for (const std::string& name : report->missing_segments) {
    if (quantified.count(name)) continue;
    found.push_back({.found_unix_ns = now_ns,
                     .segment = name,
                     .problem = "segment missing from the chain; the index did not know its size"});
  }

  // Per rank: what each stream's row counted against what the log holds now.
  absl::StatusOr<std::vector<IndexedStream>> streams = index->ListStreams(job_id);
  if (!streams.ok()) return streams.status();
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> rank_lost;  // events, bytes
  for (const IndexedStream& row : *streams) {
    auto it = log.state().streams.find({row.rank, row.agent_instance_id});
    const uint64_t events = it == log.state().streams.end() ? 0 : it->second.events;
    const uint64_t bytes = it == log.state().streams.end() ? 0 : it->second.bytes;
    if (row.events > events) {
      rank_lost[row.rank].first += row.events - events;
      rank_lost[row.rank].second += Minus(row.bytes, bytes);
    }
  }
  for (const auto& [rank, lost] : rank_lost) {
    found.push_back({.found_unix_ns = now_ns,
                     .rank = rank,
                     .problem = "indexed events not in the log",
                     .events = lost.first,
                     .bytes = lost.second});
  }

  report->lost = LossTotals();
  for (const IndexedLoss& loss : found) {
    if (absl::Status s = index->InsertLoss(job_id, loss); !s.ok()) return s;
    Add(loss, &report->lost);
    report->messages.push_back(Describe(loss));
  }
  Reconcile(&report->lost);

  // The index now describes the log as it is (and is rebuilt if it was empty).
  if (absl::Status s = index->UpsertJob(job_id, 0, 0); !s.ok()) return s;
  for (const auto& [name, segment] : on_disk) {
    if (absl::Status s = index->UpsertSegment(job_id, segment.path.string(), segment.records,
                                              segment.bytes, segment.sealed, segment.events);
        !s.ok()) {
      return s;
    }
  }
  for (const auto& [key, progress] : log.state().streams) {
    if (absl::Status s = index->UpsertStream(job_id, progress); !s.ok()) return s;
  }

  absl::StatusOr<std::vector<IndexedLoss>> all = index->ListLosses(job_id);
  if (!all.ok()) return all.status();
  report->lost_ever = LossTotals();
  for (const IndexedLoss& loss : *all) Add(loss, &report->lost_ever);
  Reconcile(&report->lost_ever);
  return absl::OkStatus();
}

}  // namespace trainscope::collector
