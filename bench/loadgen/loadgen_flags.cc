#include "loadgen_flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace trainscope::loadgen {

namespace {

absl::Status Bad(absl::string_view flag, absl::string_view expected, absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": expected ", expected, ", got '", got, "'"));
}

absl::Status ParseUnsigned(absl::string_view flag, const std::string& text, uint64_t max,
                           uint64_t min, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') {
    return Bad(flag, absl::StrCat("an integer in ", min, "..", max), text);
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value > max || value < min) {
    return Bad(flag, absl::StrCat("an integer in ", min, "..", max), text);
  }
  *out = value;
  return absl::OkStatus();
}

template <typename T>
absl::Status ParseInto(absl::string_view flag, const std::string& text, uint64_t min, T* out) {
  uint64_t value = 0;
  if (absl::Status s = ParseUnsigned(flag, text, std::numeric_limits<T>::max(), min, &value);
      !s.ok()) {
    return s;
  }
  *out = static_cast<T>(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadgenFlags> ParseLoadgenFlags(int argc, const char* const* argv) {
  LoadgenFlags flags;
  bool saw_events = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
      return flags;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "': expected --flag (see --help)"));
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (name == "dormant") {
      if (has_value) return Bad(name, "no value", value);
      flags.dormant = true;
      continue;
    }
    static const char* const kValued[] = {
        "collector", "job",       "rank",  "world-size",    "streams",   "events",
        "rate",      "threads",   "token", "restart-count", "memory-mb", "flush-timeout-ms",
        "summary",   "run-for-ms"};
    bool known = false;
    for (const char* k : kValued) known |= name == k;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (!has_value) {
      if (i + 1 >= argc) return Bad(name, "a value", "");
      value = argv[++i];
    }
    absl::Status status = absl::OkStatus();
    if (name == "collector") {
      if (value.empty()) return Bad(name, "HOST:PORT", value);
      flags.collector = value;
    } else if (name == "job") {
      flags.job = value;
    } else if (name == "token") {
      flags.token = value;
    } else if (name == "summary") {
      if (value.empty()) return Bad(name, "a file name", value);
      flags.summary = value;
    } else if (name == "rank") {
      status = ParseInto(name, value, 0, &flags.rank);
    } else if (name == "world-size") {
      status = ParseInto(name, value, 1, &flags.world_size);
    } else if (name == "streams") {
      status = ParseInto(name, value, 1, &flags.streams);
      if (status.ok() && flags.streams > 4096) status = Bad(name, "at most 4096", value);
    } else if (name == "events") {
      status = ParseInto(name, value, 0, &flags.events);
      saw_events = true;
    } else if (name == "run-for-ms") {
      status = ParseInto(name, value, 1, &flags.run_for_ms);
    } else if (name == "threads") {
      status = ParseInto(name, value, 1, &flags.threads);
      if (status.ok() && flags.threads > 256) status = Bad(name, "at most 256", value);
    } else if (name == "restart-count") {
      status = ParseInto(name, value, 0, &flags.restart_count);
    } else if (name == "memory-mb") {
      status = ParseInto(name, value, 1, &flags.memory_mb);
      if (status.ok() && flags.memory_mb > (1 << 20)) status = Bad(name, "at most 1048576", value);
    } else if (name == "flush-timeout-ms") {
      status = ParseInto(name, value, 0, &flags.flush_timeout_ms);
    } else if (name == "rate") {
      char* end = nullptr;
      errno = 0;
      flags.rate = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(flags.rate) ||
          flags.rate < 0) {
        return Bad(name, "a non-negative number of events per second", value);
      }
    }
    if (!status.ok()) return status;
  }
  if (flags.job.empty()) return absl::InvalidArgumentError("--job: required (see --help)");
  if (flags.world_size == 0) flags.world_size = flags.rank + flags.streams;
  if (static_cast<uint64_t>(flags.rank) + flags.streams > flags.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--world-size ", flags.world_size, ": expected at least --rank + --streams = ",
                     static_cast<uint64_t>(flags.rank) + flags.streams));
  }
  if (saw_events && flags.run_for_ms > 0) {
    return absl::InvalidArgumentError("--events and --run-for-ms: give one or the other");
  }
  return flags;
}

}  // namespace trainscope::loadgen
