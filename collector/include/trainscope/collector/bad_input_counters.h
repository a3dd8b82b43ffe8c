// Counts bad input per cause and logs it without flooding.
//
// Usage:
//   BadInputCounters counters;                    // logs to stderr
//   counters.Count(status, "job j rank 3 (host:pid)");
//   counters.count("hello.rank");                 // how many so far
//
// The first occurrence of a cause is logged at once; later ones at most once
// per `log_interval`, with the number seen since the last line, so a peer
// that repeats a mistake in a loop cannot flood the log.
//
// Threading: thread-safe (one mutex; bad input is the cold path).
#ifndef TRAINSCOPE_COLLECTOR_BAD_INPUT_COUNTERS_H_
#define TRAINSCOPE_COLLECTOR_BAD_INPUT_COUNTERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"

namespace trainscope::collector {

class BadInputCounters {
 public:
  using Clock = std::function<absl::Time()>;
  using LogSink = std::function<void(absl::string_view line)>;

  // Defaults: 10 s between lines per cause, the real clock, one line on stderr.
  explicit BadInputCounters(absl::Duration log_interval = absl::Seconds(10), Clock clock = nullptr,
                            LogSink sink = nullptr);

  // Counts `status` under BadInputCause(status); `who` names the sender.
  void Count(const absl::Status& status, absl::string_view who);

  uint64_t count(absl::string_view cause) const;
  uint64_t total() const;
  std::map<std::string, uint64_t> Snapshot() const;

 private:
  struct PerCause {
    uint64_t total = 0;
    uint64_t since_last_line = 0;
    absl::Time last_line = absl::InfinitePast();
  };

  const absl::Duration log_interval_;
  const Clock clock_;
  const LogSink sink_;
  mutable base::Mutex mu_;
  std::map<std::string, PerCause, std::less<>> causes_ ABSL_GUARDED_BY(mu_);
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_BAD_INPUT_COUNTERS_H_
