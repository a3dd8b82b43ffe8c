// Compares what the index promised for a job's log with what JobLog::Open
// found on disk, so that no loss is silent: a deleted segment, one truncated
// (to 0 bytes or less), a gap in the chain, records gone from a rank.
//
// Usage (once per reopened job, before anything new is appended):
//   RecoveryReport report;
//   ASSIGN_OR_RETURN(auto log, JobLog::Open(options, &report));
//   RETURN_IF_ERROR(AuditRecovery(job_id, *log, index.get(), absl::Now(), &report));
//   report.lost;       // found now: records, events, bytes, per rank
//   report.lost_ever;  // with what earlier reopenings found
//
// The index knows each segment's records, events and bytes and each stream's
// events as of its last update (the collector updates it about once a
// second), so a loss is measured as far as the index knew: a count the log
// exceeds (the index lagged) is no loss. Each finding is kept in the index's
// losses table, and the index's rows are then corrected to what the log
// holds (which rebuilds a missing index), so a loss is reported once as new
// and stays in lost_ever.
//
// Threading: runs on the caller's thread; `index` is not thread-safe.
#ifndef TRAINSCOPE_COLLECTOR_STORE_RECOVERY_AUDIT_H_
#define TRAINSCOPE_COLLECTOR_STORE_RECOVERY_AUDIT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

// Fills report->lost and report->lost_ever and adds a message per finding;
// records the findings in `index` and brings its rows for `job_id` in line
// with `log`. Fails only when the index cannot be read or written.
absl::Status AuditRecovery(const std::string& job_id, const JobLog& log, LogIndex* index,
                           absl::Time now, RecoveryReport* report);

// The report as JobStatus.recovery shows it (lost_ever for the losses:
// status tells everything lost so far, the log line what is new).
trainscope::v1::LogRecovery RecoveryToProto(const RecoveryReport& report, absl::Time now);

// Whether status should show the report: anything was read, lost or repaired.
bool WorthShowing(const RecoveryReport& report);

// "1,234 events, 56 records, 7.8 MB lost" style summary of `totals`, for log
// lines and the CLI; "nothing lost" when empty.
std::string DescribeLoss(const LossTotals& totals);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_RECOVERY_AUDIT_H_
