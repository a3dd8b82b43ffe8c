#include "trainscope/viewer/connection_model.h"

#include <tuple>

namespace trainscope::viewer {

const char* ConnectionModel::StateName(State state) {
  switch (state) {
    case State::kConnecting:
      return "connecting";
    case State::kLive:
      return "live";
    case State::kStale:
      return "stale";
    case State::kDisconnected:
      return "disconnected";
    case State::kRetrying:
      return "retrying";
  }
  return "?";
}

void ConnectionModel::Observe(const LinkReport& report, int64_t now_ns) {
  State state;
  const bool contacted = report.last_contact_ns > 0;
  const int64_t silence = contacted ? now_ns - report.last_contact_ns : INT64_MAX;
  switch (report.phase) {
    case LinkReport::Phase::kConnecting:
      state = State::kConnecting;
      break;
    case LinkReport::Phase::kRetrying:
      state = State::kRetrying;
      break;
    case LinkReport::Phase::kFollowing:
    default:
      // Following, but a collector killed without a word leaves the feed
      // silent: only the time since the last contact tells.
      state = silence <= options_.stale_after_ns        ? State::kLive
              : silence <= options_.disconnected_after_ns ? State::kStale
                                                         : State::kDisconnected;
      break;
  }
  const int64_t age_s =
      report.last_update_ns > 0 ? (now_ns - report.last_update_ns) / 1'000'000'000 : -1;
  const bool was_live = state_ == State::kLive;
  if (was_live && state != State::kLive) {
    outages_.push_back({report.last_contact_ns > 0 ? report.last_contact_ns : now_ns, 0});
  } else if (!was_live && state == State::kLive && !outages_.empty() &&
             outages_.back().end_ns == 0) {
    outages_.back().end_ns = report.last_contact_ns;
  }
  const auto before = std::tie(state_, update_age_s_, attempts_, error_);
  const bool changed = before != std::tie(state, age_s, report.attempts, report.error) ||
                       was_live != (state == State::kLive);
  if (state == State::kLive) ever_live_ = true;
  state_ = state;
  update_age_s_ = age_s;
  attempts_ = report.attempts;
  error_ = report.error;
  if (changed) ++version_;
}

std::string ConnectionModel::Text() const {
  std::string text = StateName(state_);
  if (state_ == State::kRetrying) {
    text += " (attempt " + std::to_string(attempts_ + 1) + ")";
    if (!error_.empty()) text += ": " + error_;
  }
  if (update_age_s_ >= 0) {
    text += " \xC2\xB7 last update " + std::to_string(update_age_s_) + " s ago";
  } else if (state_ != State::kConnecting) {
    text += " \xC2\xB7 no update yet";
  }
  return text;
}

}  // namespace trainscope::viewer
