// Turns the collector's answers (job lists, job status, command replies) into
// the text the CLI prints, or into JSON. Pure functions of their inputs and
// `now`, so tests assert on the exact output.
#ifndef TRAINSCOPE_CLI_STATUS_PRINTER_H_
#define TRAINSCOPE_CLI_STATUS_PRINTER_H_

#include <string>

#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "trainscope/v1/commands.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::cli {

// Columns: JOB STATE RANKS EVENTS EVENTS/S RECORDING (RANKS is connected/world).
// An empty list gives one friendly line naming `collector`.
std::string RenderJobsTable(const trainscope::v1::ListJobsResponse& jobs,
                            const std::string& collector);

// The job's summary, a per-rank table (RANK HOST PID CONNECTED EVENTS BATCHES
// AGENT-DROPS REFUSED LAST-SEEN), what the log refused or lost per rank, what
// reopening the log found (RenderLogRecovery) and the commands issued so far.
std::string RenderJobStatus(const trainscope::v1::JobStatus& status, absl::Time now,
                            absl::TimeZone zone);

// "recovered from disk: N records in S segments; LOST E events, R records,
// B (k segments missing)..." and one indented line per finding (at most 10).
std::string RenderLogRecovery(const trainscope::v1::LogRecovery& recovery);

// The collector's place in the NATS tier, one line per role, e.g.
// "tier node -> nats://h:4222: connected, 12 buffered, 4,567 published
// (acknowledged), 0 caught up, 1 rewinds, 0 outages" and "tier job level <-
// nats://h:4222: 4,560 consumed, 3 duplicates dropped, lag 12.3 ms".
// Empty when the collector is in no tier.
std::string RenderTierStatus(const trainscope::v1::TierStatus& tier);

// The one-line summary of a job used by `status` and `tail`:
// "job J: running, 3/4 ranks connected (4 seen), 12,345 events (1,204/s), recording on".
std::string RenderJobSummaryLine(const trainscope::v1::JobSummary& summary);

// One line per command: "2026-11-23 08:03:12.345  halt by a@h, reached 4 ranks, reason \"x\"".
std::string RenderCommandRecord(const trainscope::v1::CommandRecord& command, absl::TimeZone zone);

// The message as one line of JSON (proto3 JSON mapping, field names as in the
// .proto files, default values included so scripts see every field).
std::string ToJsonLine(const google::protobuf::Message& message);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_STATUS_PRINTER_H_
