// When the sender tries the collector again, and what it tells the user
// about the connection: exponential backoff with jitter between
// reconnect_min and reconnect_max, the longest wait after a permanent
// refusal (a bad token, an incompatible protocol), "not reachable" said once
// after it has been down a while, each distinct refusal said once, and
// "connected" said again only after one of those.
//
// Usage (sender thread):
//   ReconnectPolicy policy(options.reconnect_min, options.reconnect_max, seed, address);
//   if (now >= policy.next_attempt()) {
//     if (!ready) { if (auto line = policy.Unreachable(now)) Log(*line); }
//     else { policy.Reachable(); ...open...; on failure policy.RetryLater(false, now); }
//   }
//   ReconnectPolicy::Connected c = policy.OnConnected();  // HelloAck: c.reconnect, c.line
//   if (auto line = policy.OnDisconnected(status, why, was_streaming, now)) Log(*line);
//
// Lines are returned, not printed: the caller owns the log.
//
// Threading: not thread-safe; one owner (the sender thread).
#ifndef TRAINSCOPE_AGENT_SRC_RECONNECT_POLICY_H_
#define TRAINSCOPE_AGENT_SRC_RECONNECT_POLICY_H_

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace trainscope::agent {

class ReconnectPolicy {
 public:
  // How long the collector may be unreachable before the user is told.
  static constexpr absl::Duration kReportDownAfter = absl::Seconds(2);

  // `jitter_seed`: the agent's instance id, so ranks restarted together
  // spread their retries.
  ReconnectPolicy(absl::Duration min, absl::Duration max, uint64_t jitter_seed,
                  std::string address);

  // A stream ended with this status: will retrying with the same Hello fail again?
  static bool IsPermanentRefusal(absl::StatusCode code);

  absl::Time next_attempt() const { return next_attempt_; }

  // The connection is not up at `now`; the caller waited for it (that paced
  // the attempt), so the next one may come at once. A line the first time it
  // has been down kReportDownAfter.
  std::optional<std::string> Unreachable(absl::Time now);
  // The connection is up (a stream may be opened).
  void Reachable() { first_unready_ = absl::InfinitePast(); }

  // A HelloAck: backoff back to its minimum. `reconnect`: a stream had been
  // up before (counted as a reconnect); `line`: what to say, if anything.
  struct Connected {
    bool reconnect = false;
    std::optional<std::string> line;
  };
  Connected OnConnected();

  // The stream closed with `status` (`why`: the sender's reason); schedules
  // the next attempt from `now`.
  std::optional<std::string> OnDisconnected(const absl::Status& status, absl::string_view why,
                                            bool was_streaming, absl::Time now);
  // The next attempt after the current backoff (jittered ±20 %), which then
  // doubles up to the maximum; the maximum at once for a permanent refusal.
  void RetryLater(bool permanent_refusal, absl::Time now);

 private:
  const absl::Duration min_;
  const absl::Duration max_;
  const std::string address_;
  absl::Duration backoff_;
  absl::Time next_attempt_ = absl::InfinitePast();
  std::mt19937_64 jitter_rng_;
  bool ever_streamed_ = false;
  bool announced_down_ = false;
  absl::Time first_unready_ = absl::InfinitePast();
  std::string last_refusal_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_RECONNECT_POLICY_H_
