// Small, pure formatters for numbers, times and enums as the CLI prints them.
// Kept apart from I/O so every output format is unit-tested.
#ifndef TRAINSCOPE_CLI_FORMATTING_H_
#define TRAINSCOPE_CLI_FORMATTING_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::cli {

// 12345 -> "12,345".
std::string FormatCount(uint64_t value);
// Events per second: 1204.4 -> "1,204/s"; 2.25 -> "2.2/s"; 0 -> "0/s".
std::string FormatRate(double per_second);
// 1536 -> "1.50 KiB"; 12 -> "12 B" (base::FormatBytes).
std::string FormatBytes(uint64_t bytes);
// Nanoseconds as milliseconds for the tables' "_ms" columns: 1234567 -> "1.23".
std::string FormatMs(int64_t ns);
// How long ago `unix_ns` was at `now`: "4s ago", "2m05s ago", "3h10m ago",
// "never" for 0, "just now" under a second (or in the future: clock skew).
std::string FormatAgo(int64_t unix_ns, absl::Time now);
// "2026-11-23 08:03:12.345" in `zone`; "-" for 0.
std::string FormatTimestamp(int64_t unix_ns, absl::TimeZone zone);
// JOB_STATE_RUNNING -> "running".
std::string JobStateName(trainscope::v1::JobState state);
// Total drops: "0", or "12 (ring 10, buffer 2)" naming the non-zero causes.
std::string FormatDrops(const trainscope::v1::DropCounters& drops);
uint64_t TotalDrops(const trainscope::v1::DropCounters& drops);
// One line per alert state change: "RAISED #3 straggler step 57 (since 55):
// rank 2 is a straggler: ..." ; halts by policy are marked.
std::string FormatAlert(const trainscope::v1::Alert& alert);
// Quotes text for a one-line display: "a \"b\"" with newlines escaped.
std::string Quote(const std::string& text);
// A clock domain as `trainscope clocks` shows it: the boot id cut to 8
// characters ("monotonic@boot:3f1c0e7a+test:..."), "-" for none.
std::string ShortClockDomain(const std::string& domain);
// A duration in the unit that suits its size: 37012345 -> "37.012 ms",
// -4200 -> "-4.2 us", 812 -> "812 ns", 0 -> "0"; "+" before positive ones
// when `plus_sign` (offsets, where the sign says which clock is ahead).
std::string FormatDuration(double ns, bool plus_sign = false);
// `trainscope clocks`' table: a line naming the reference rank, then per
// device its domain, its offset and drift relative to the reference device
// (0 within the reference's domain, never the epoch-sized offset onto Unix
// time) in human units, uncertainty, the signal used and the samples of
// each signal, and "insufficient evidence" where no drift could be fitted.
std::string FormatClockTable(const trainscope::v1::ClockReport& report);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_FORMATTING_H_
