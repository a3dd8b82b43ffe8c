#include "reconnect_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::agent {

ReconnectPolicy::ReconnectPolicy(absl::Duration min, absl::Duration max, uint64_t jitter_seed,
                                 std::string address)
    : min_(min),
      max_(std::max(min, max)),
      address_(std::move(address)),
      backoff_(min),
      jitter_rng_(jitter_seed) {}

bool ReconnectPolicy::IsPermanentRefusal(absl::StatusCode code) {
  return code == absl::StatusCode::kFailedPrecondition ||
         code == absl::StatusCode::kPermissionDenied ||
         code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kUnauthenticated;
}

std::optional<std::string> ReconnectPolicy::Unreachable(absl::Time now) {
  if (first_unready_ == absl::InfinitePast()) first_unready_ = now;
  next_attempt_ = now;
  if (announced_down_ || now - first_unready_ < kReportDownAfter) return std::nullopt;
  announced_down_ = true;
  return absl::StrCat("the collector at ", address_, " is not reachable; retrying with backoff");
}

ReconnectPolicy::Connected ReconnectPolicy::OnConnected() {
  Connected connected;
  backoff_ = min_;
  last_refusal_.clear();
  connected.reconnect = ever_streamed_;
  if (ever_streamed_ || announced_down_) {
    connected.line = absl::StrCat("connected to the collector at ", address_);
  }
  ever_streamed_ = true;
  announced_down_ = false;
  return connected;
}

std::optional<std::string> ReconnectPolicy::OnDisconnected(const absl::Status& status,
                                                           absl::string_view why,
                                                           bool was_streaming, absl::Time now) {
  std::optional<std::string> line;
  const bool permanent = IsPermanentRefusal(status.code());
  if (permanent) {
    // Said once per distinct message: the collector will keep refusing.
    if (status.message() != last_refusal_) {
      last_refusal_ = std::string(status.message());
      line = absl::StrCat("the collector refused the stream: ", status.ToString(),
                          "; retrying every ", absl::FormatDuration(max_));
    }
  } else if (was_streaming || !announced_down_) {
    announced_down_ = true;
    line = absl::StrCat(why, " (", status.ToString(), "); reconnecting");
  }
  RetryLater(permanent, now);
  return line;
}

void ReconnectPolicy::RetryLater(bool permanent_refusal, absl::Time now) {
  if (permanent_refusal) backoff_ = max_;
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  next_attempt_ = now + backoff_ * jitter(jitter_rng_);
  backoff_ = std::min(backoff_ * 2, max_);
}

}  // namespace trainscope::agent
