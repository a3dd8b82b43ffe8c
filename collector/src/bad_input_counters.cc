#include "trainscope/collector/bad_input_counters.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {

BadInputCounters::BadInputCounters(absl::Duration log_interval, Clock clock, LogSink sink)
    : log_interval_(log_interval),
      clock_(clock ? std::move(clock) : Clock([] { return absl::Now(); })),
      sink_(sink ? std::move(sink) : LogSink([](absl::string_view line) {
        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
      })) {}

void BadInputCounters::Count(const absl::Status& status, absl::string_view who) {
  const std::string cause = BadInputCause(status);
  std::string line;
  {
    base::MutexLock lock(&mu_);
    ++total_;
    PerCause& c = causes_[cause];
    ++c.total;
    ++c.since_last_line;
    const absl::Time now = clock_();
    if (now - c.last_line < log_interval_) return;
    line = absl::StrCat("trainscope-collector: bad input [", cause, "]");
    if (c.total > 1) absl::StrAppend(&line, " (", c.since_last_line, " since the last report)");
    absl::StrAppend(&line, " from ", who, ": ", status.message());
    c.since_last_line = 0;
    c.last_line = now;
  }
  sink_(line);  // outside the lock: the sink may be slow
}

uint64_t BadInputCounters::count(absl::string_view cause) const {
  base::MutexLock lock(&mu_);
  auto it = causes_.find(cause);
  return it == causes_.end() ? 0 : it->second.total;
}

uint64_t BadInputCounters::total() const {
  base::MutexLock lock(&mu_);
  return total_;
}

std::map<std::string, uint64_t> BadInputCounters::Snapshot() const {
  base::MutexLock lock(&mu_);
  std::map<std::string, uint64_t> out;
  for (const auto& [cause, c] : causes_) out[cause] = c.total;
  return out;
}

}  // namespace trainscope::collector
