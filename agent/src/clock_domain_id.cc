#include "clock_domain_id.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainscope::agent {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The monotonic line of timens_offsets ("monotonic <secs> <nanosecs>"), as
// "<secs>.<nanosecs>", or "" when it is absent or zero (no shift).
std::string MonotonicShift(absl::string_view timens_offsets) {
  for (absl::string_view line : absl::StrSplit(timens_offsets, '\n')) {
    std::vector<absl::string_view> words =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    if (words.size() != 3 || words[0] != "monotonic") continue;
    int64_t secs = 0, nanos = 0;
    if (!absl::SimpleAtoi(words[1], &secs) || !absl::SimpleAtoi(words[2], &nanos)) return "";
    if (secs == 0 && nanos == 0) return "";
    return absl::StrCat(secs, ".", nanos);
  }
  return "";
}

}  // namespace

std::string ClockDomainId::FromParts(absl::string_view boot_id, absl::string_view timens_offsets,
                                     const ClockPerturbation& perturbation) {
  const absl::string_view boot = absl::StripAsciiWhitespace(boot_id);
  if (boot.empty()) return "";
  std::string id = absl::StrCat("boot:", boot);
  if (const std::string shift = MonotonicShift(timens_offsets); !shift.empty()) {
    absl::StrAppend(&id, "+timens:", shift);
  }
  if (perturbation.active()) {
    // Equal perturbations are one clock; the origin matters only with drift.
    absl::StrAppend(&id, "+test:", perturbation.offset_ns(), ":", perturbation.drift_ppm());
    if (perturbation.drift_ppm() != 0) absl::StrAppend(&id, "@", perturbation.origin_ns());
  }
  return id;
}

std::string ClockDomainId::Monotonic(const ClockPerturbation& perturbation) {
  return FromParts(ReadFile("/proc/sys/kernel/random/boot_id"),
                   ReadFile("/proc/self/timens_offsets"), perturbation);
}

}  // namespace trainscope::agent
