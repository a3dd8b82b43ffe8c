// Follows one job on the collector's live feed on a thread of its own and
// posts what arrives, already converted, into a FeedCoalescer for the UI
// thread. It uses the client library's FeedFollower over a ZmqFeedSource
// (subscribe, snapshot, sequence numbers, gaps) and, at start and after
// every gap, fetches the job's recent steps and operators
// (SnapshotQueryClient) so the views are whole again. Its subscription
// ("<job>/") also brings the loss contribution: "<job>/loss" (the difficult
// items) and "<job>/maps" (item snapshots); the snapshots of an item the
// user picks are fetched on the client's thread (RequestItem), as is the
// shown item's at every history.
//
// It never gives up: a collector that is not up yet, or that stops
// answering (killed: its feed just goes silent, so after `probe_after` of
// silence the snapshot server is asked for the job's state), is retried
// with a growing pause (at most `max_backoff`), and when it answers again
// the history is refetched. What it saw is link() (a LinkReport for the
// ConnectionModel on the UI thread).
//
// Usage:
//   FeedCoalescer coalescer;
//   LiveFeedClient client({.feed = "tcp://127.0.0.1:7071",
//                          .snapshot = "tcp://127.0.0.1:7072", .job_id = "job-1"},
//                         &coalescer);
//   client.Start();
//   ... coalescer.Take() on the UI thread ...
//   client.RequestItem(1432);  // from the UI thread: the answer comes as a Delta
//   client.Stop();  // joins; also done by the destructor
//
// Threading: Start/Stop from one thread; RequestItem from any thread; the
// feed runs on the client's own thread, which owns the ZeroMQ sockets.
#ifndef TRAINSCOPE_VIEWER_LIVE_FEED_CLIENT_H_
#define TRAINSCOPE_VIEWER_LIVE_FEED_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/client/client_security.h"
#include "trainscope/viewer/connection_model.h"
#include "trainscope/viewer/feed_coalescer.h"
#include "trainscope/viewer/snapshot_query_client.h"

namespace trainscope::viewer {

class LiveFeedClient {
 public:
  struct Options {
    std::string feed;
    std::string snapshot;
    std::string job_id;
    SnapshotQueryClient::HistoryOptions history;
    client::ClientSecurity security;  // CURVE on the feed and snapshot sockets
    // A silent feed this long: ask the snapshot server whether it is alive.
    absl::Duration probe_after = absl::Seconds(1);
    absl::Duration probe_timeout = absl::Seconds(2);
    absl::Duration max_backoff = absl::Seconds(5);
    // How long the first snapshot of an attempt may take.
    absl::Duration connect_timeout = absl::Seconds(3);
  };

  LiveFeedClient(Options options, FeedCoalescer* out);
  ~LiveFeedClient();
  LiveFeedClient(const LiveFeedClient&) = delete;
  LiveFeedClient& operator=(const LiveFeedClient&) = delete;

  void Start();
  void Stop();
  // Fetches `item`'s map snapshots (within the feed's next poll, 100 ms) and
  // keeps asking for it at every history refetch.
  void RequestItem(uint64_t item);

  uint64_t updates() const { return updates_.load(std::memory_order_relaxed); }
  uint64_t gaps() const { return gaps_.load(std::memory_order_relaxed); }
  // What the feed thread last saw of its link (any thread).
  LinkReport link() const;
  uint64_t connections() const { return connections_.load(std::memory_order_relaxed); }

 private:
  void Run();
  // One attempt: connects, follows until the link fails or Stop. Returns why
  // it ended (OK on Stop).
  absl::Status Follow();
  void SetLink(LinkReport::Phase phase, const std::string& error);
  void Touch(bool update);
  void PostHistory(SnapshotQueryClient* query);
  // The loss list and the wanted item's (or the top item's) snapshots.
  void FetchLoss(SnapshotQueryClient* query, FeedCoalescer::Delta* delta);

  Options options_;
  FeedCoalescer* out_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> updates_{0};
  std::atomic<uint64_t> gaps_{0};
  std::atomic<uint64_t> connections_{0};
  mutable base::Mutex link_mu_;
  LinkReport link_ ABSL_GUARDED_BY(link_mu_);
  std::thread thread_;
  base::Mutex item_mu_;
  std::optional<uint64_t> wanted_item_ ABSL_GUARDED_BY(item_mu_);
  bool item_requested_ ABSL_GUARDED_BY(item_mu_) = false;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LIVE_FEED_CLIENT_H_
