#include "trainscope/cli/formatting.h"

#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "trainscope/base/number_format.h"
#include "trainscope/cli/table_printer.h"

namespace trainscope::cli {

std::string FormatCount(uint64_t value) { return base::FormatThousands(value); }

std::string FormatRate(double per_second) {
  if (!std::isfinite(per_second) || per_second <= 0) return "0/s";
  if (per_second < 10) return absl::StrFormat("%.1f/s", per_second);
  return absl::StrCat(FormatCount(static_cast<uint64_t>(std::llround(per_second))), "/s");
}

std::string FormatBytes(uint64_t bytes) { return base::FormatBytes(static_cast<double>(bytes)); }

std::string FormatMs(int64_t ns) { return absl::StrFormat("%.2f", static_cast<double>(ns) / 1e6); }

std::string FormatAgo(int64_t unix_ns, absl::Time now) {
  if (unix_ns == 0) return "never";
  const int64_t seconds = absl::ToInt64Seconds(now - absl::FromUnixNanos(unix_ns));
  if (seconds < 1) return "just now";
  if (seconds < 60) return absl::StrCat(seconds, "s ago");
  if (seconds < 3600) return absl::StrFormat("%dm%02ds ago", seconds / 60, seconds % 60);
  if (seconds < 86400) return absl::StrFormat("%dh%02dm ago", seconds / 3600, seconds % 3600 / 60);
  return absl::StrFormat("%dd%02dh ago", seconds / 86400, seconds % 86400 / 3600);
}

std::string FormatTimestamp(int64_t unix_ns, absl::TimeZone zone) {
  if (unix_ns == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::FromUnixNanos(unix_ns), zone);
}

std::string FormatAlert(const trainscope::v1::Alert& alert) {
  const bool raised = alert.state() == trainscope::v1::ALERT_STATE_RAISED;
  std::string line = absl::StrCat(raised ? "RAISED " : "CLEARED", " #", alert.alert_id(), " ",
                                  alert.rule(), " step ", alert.step());
  if (raised && alert.onset_step() != 0 && alert.onset_step() != alert.step()) {
    absl::StrAppend(&line, " (since ", alert.onset_step(), ")");
  }
  absl::StrAppend(&line, ": ", alert.message());
  if (alert.halted_job()) absl::StrAppend(&line, " [halted the job]");
  return line;
}

std::string JobStateName(trainscope::v1::JobState state) {
  switch (state) {
    case trainscope::v1::JOB_STATE_RUNNING:
      return "running";
    case trainscope::v1::JOB_STATE_IDLE:
      return "idle";
    case trainscope::v1::JOB_STATE_FINISHED:
      return "finished";
    case trainscope::v1::JOB_STATE_HALTED:
      return "halted";
    case trainscope::v1::JOB_STATE_LOST:
      return "lost";
    default:
      return "unknown";
  }
}

uint64_t TotalDrops(const trainscope::v1::DropCounters& drops) {
  return drops.ring_full() + drops.buffer_full() + drops.shutdown();
}

std::string FormatDrops(const trainscope::v1::DropCounters& drops) {
  const uint64_t total = TotalDrops(drops);
  if (total == 0) return "0";
  std::vector<std::string> causes;
  if (drops.ring_full() != 0)
    causes.push_back(absl::StrCat("ring ", FormatCount(drops.ring_full())));
  if (drops.buffer_full() != 0) {
    causes.push_back(absl::StrCat("buffer ", FormatCount(drops.buffer_full())));
  }
  if (drops.shutdown() != 0) {
    causes.push_back(absl::StrCat("shutdown ", FormatCount(drops.shutdown())));
  }
  return absl::StrCat(FormatCount(total), " (", absl::StrJoin(causes, ", "), ")");
}

std::string Quote(const std::string& text) { return absl::StrCat("\"", absl::CEscape(text), "\""); }

std::string ShortClockDomain(const std::string& domain) {
  if (domain.empty()) return "-";
  // Boot ids are 36-character UUIDs: 8 characters tell a job's hosts apart.
  const size_t boot = domain.find("boot:");
  if (boot == std::string::npos) return domain;
  const size_t id = boot + 5;
  size_t end = domain.find('+', id);
  if (end == std::string::npos) end = domain.size();
  if (end - id <= 8) return domain;
  return domain.substr(0, id + 8) + domain.substr(end);
}

// Not base::FormatDuration: the clocks table aligns its offsets in fixed
// decimals per unit (ms to the microsecond), which significant digits lose.
std::string FormatDuration(double ns, bool plus_sign) {
  if (!std::isfinite(ns)) return "?";
  if (ns == 0) return "0";
  const double a = std::fabs(ns);
  const char* sign = ns < 0 ? "-" : (plus_sign ? "+" : "");
  if (a < 1e3) return absl::StrFormat("%s%.0f ns", sign, a);
  if (a < 1e6) return absl::StrFormat("%s%.1f us", sign, a / 1e3);
  if (a < 1e9) return absl::StrFormat("%s%.3f ms", sign, a / 1e6);
  return absl::StrFormat("%s%.3f s", sign, a / 1e9);
}

namespace {

std::string ClockSourceName(const trainscope::v1::ClockEstimate& c) {
  switch (c.source()) {
    case trainscope::v1::CLOCK_SOURCE_CLOCK_DOMAIN:
      return absl::StrCat("same clock as rank ", c.domain_leader());
    case trainscope::v1::CLOCK_SOURCE_GPU_COLLECTIVES:
      return "gpu collectives";
    case trainscope::v1::CLOCK_SOURCE_COLLECTIVES:
      return "collectives";
    case trainscope::v1::CLOCK_SOURCE_POINT_TO_POINT:
      return "send/recv";
    case trainscope::v1::CLOCK_SOURCE_PROBES:
      return "probes";
    case trainscope::v1::CLOCK_SOURCE_NOMINAL:
      return "own wall clock";
    default:
      return "none";
  }
}

}  // namespace

std::string FormatClockTable(const trainscope::v1::ClockReport& report) {
  const trainscope::v1::ClockEstimate* reference = nullptr;
  for (const trainscope::v1::ClockEstimate& c : report.devices()) {
    if (c.reference()) reference = &c;
  }
  std::string out;
  if (reference != nullptr) {
    absl::StrAppend(&out, "Against rank ", reference->rank(),
                    "'s clock (the reference): OFFSET is its clock minus the device's, DRIFT "
                    "how much faster it runs.\n");
  }
  TablePrinter table({{"RANK", TablePrinter::kRight},
                      {"DOMAIN"},
                      {"OFFSET", TablePrinter::kRight},
                      {"DRIFT", TablePrinter::kRight},
                      {"UNCERTAINTY", TablePrinter::kRight},
                      {"SOURCE"},
                      {"GPU_COLL", TablePrinter::kRight},
                      {"CPU_COLL", TablePrinter::kRight},
                      {"PROBES", TablePrinter::kRight},
                      {"JUMPS", TablePrinter::kRight},
                      {"EVIDENCE"}});
  for (const trainscope::v1::ClockEstimate& c : report.devices()) {
    // The reference and its domain read the reference clock itself.
    const bool exact =
        c.reference() || (reference != nullptr && c.domain_leader() == reference->rank() &&
                          c.source() == trainscope::v1::CLOCK_SOURCE_CLOCK_DOMAIN);
    std::string offset = FormatDuration(static_cast<double>(c.offset_to_reference_device_ns()),
                                        /*plus_sign=*/true);
    // No drift was fitted: "-", not a 0 that reads as a measurement.
    std::string drift = "-";
    if (!c.insufficient_evidence()) {
      const double ppm = c.drift_to_reference_device_ppm();
      drift = ppm == 0 ? "0" : absl::StrFormat("%+.2f ppm", ppm);
    }
    std::string uncertainty = "exact";
    if (!exact) {
      uncertainty = c.source() == trainscope::v1::CLOCK_SOURCE_UNSPECIFIED
                        ? "unknown"
                        : absl::StrCat("+/-", FormatDuration(c.uncertainty_ns()));
    }
    std::string evidence;
    if (c.reference()) {
      evidence = "reference";
    } else if (c.insufficient_evidence()) {
      evidence = "insufficient evidence";
    }
    table.AddRow({absl::StrCat(c.rank()), ShortClockDomain(c.clock_domain()), offset, drift,
                  uncertainty, c.reference() ? "reference" : ClockSourceName(c),
                  absl::StrCat(c.gpu_collective_samples()), absl::StrCat(c.collective_samples()),
                  absl::StrCat(c.probe_samples()), absl::StrCat(c.jumps()), evidence});
  }
  absl::StrAppend(&out, table.Render());
  return out;
}

}  // namespace trainscope::cli
