// The health of the viewer's link to its collector, as the status bar shows
// it: connecting, live, stale, disconnected or retrying, the age of the
// newest update ("last update 12 s ago"), whether what the views show is
// stale (the Jobs table greys it), and the outages the overview marks as
// gaps instead of drawing across them.
//
// It is fed a plain LinkReport (what the feed thread last saw, e.g.
// LiveFeedClient::link()) and the current time, both by the caller, so its
// transitions are tested with an injected clock:
//
//   ConnectionModel connection;
//   connection.Observe(client.link(), absl::ToUnixNanos(absl::Now()));  // each frame
//   label->setText(connection.Text());
//   if (connection.data_stale()) ...grey...
//   for (const ConnectionModel::Outage& o : connection.outages()) ...
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_CONNECTION_MODEL_H_
#define TRAINSCOPE_VIEWER_CONNECTION_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::viewer {

// What the feed thread reports about its link (times: Unix ns; 0 = never).
struct LinkReport {
  enum class Phase {
    kConnecting,  // the first attempt is under way
    kFollowing,   // subscribed and snapshotted; messages or probes keep it alive
    kRetrying,    // an attempt failed or the collector stopped answering
  };
  Phase phase = Phase::kConnecting;
  int64_t last_contact_ns = 0;  // newest feed message or answered probe
  int64_t last_update_ns = 0;   // newest feed message (data for the views)
  uint32_t attempts = 0;        // failed attempts since the link was last up
  std::string error;            // why the last attempt failed
};

class ConnectionModel {
 public:
  enum class State { kConnecting, kLive, kStale, kDisconnected, kRetrying };
  struct Options {
    // No contact for this long: the views' data may be old (kStale).
    int64_t stale_after_ns = 5'000'000'000;
    // No contact for this long while following: the collector is gone.
    int64_t disconnected_after_ns = 15'000'000'000;
  };
  // A time range (Unix ns) the views have no data for: from the last contact
  // before the link went bad to the first one after it came back (end_ns = 0
  // while it lasts).
  struct Outage {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };

  ConnectionModel() : ConnectionModel(Options{}) {}
  explicit ConnectionModel(Options options) : options_(options) {}

  void Observe(const LinkReport& report, int64_t now_ns);

  State state() const { return state_; }
  // Whether the views show data that may no longer hold (anything but live,
  // once data has arrived at all).
  bool data_stale() const { return state_ != State::kLive && ever_live_; }
  // Whole seconds since the newest update; -1 when none came yet.
  int64_t update_age_s() const { return update_age_s_; }
  // "live · last update 2 s ago", "retrying (attempt 3): <why> · last update 40 s ago", ...
  std::string Text() const;
  const std::vector<Outage>& outages() const { return outages_; }
  // Bumped whenever Text(), data_stale() or outages() change.
  uint64_t version() const { return version_; }

  static const char* StateName(State state);

 private:
  Options options_;
  State state_ = State::kConnecting;
  bool ever_live_ = false;
  int64_t update_age_s_ = -1;
  uint32_t attempts_ = 0;
  std::string error_;
  std::vector<Outage> outages_;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_CONNECTION_MODEL_H_
