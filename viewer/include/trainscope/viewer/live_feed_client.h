// Follows one job on the collector's live feed on a thread of its own and
// posts what arrives, already converted, into a FeedCoalescer for the UI
// thread. It uses the CLI's FeedFollower over a ZmqFeedSource (subscribe,
// snapshot, sequence numbers, gaps) and, at start and after every gap,
// fetches the job's recent steps and operators (SnapshotQueryClient) so the
// views are whole again.
//
// Usage:
//   FeedCoalescer coalescer;
//   LiveFeedClient client({.feed = "tcp://127.0.0.1:7071",
//                          .snapshot = "tcp://127.0.0.1:7072", .job_id = "job-1"},
//                         &coalescer);
//   client.Start();
//   ... coalescer.Take() on the UI thread ...
//   client.Stop();  // joins; also done by the destructor
//
// Threading: Start/Stop from one thread; the feed runs on the client's own
// thread, which owns the ZeroMQ sockets.
#ifndef TRAINSCOPE_VIEWER_LIVE_FEED_CLIENT_H_
#define TRAINSCOPE_VIEWER_LIVE_FEED_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

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
  };

  LiveFeedClient(Options options, FeedCoalescer* out);
  ~LiveFeedClient();
  LiveFeedClient(const LiveFeedClient&) = delete;
  LiveFeedClient& operator=(const LiveFeedClient&) = delete;

  void Start();
  void Stop();

  uint64_t updates() const { return updates_.load(std::memory_order_relaxed); }
  uint64_t gaps() const { return gaps_.load(std::memory_order_relaxed); }

 private:
  void Run();
  void PostHistory(SnapshotQueryClient* query);

  Options options_;
  FeedCoalescer* out_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> updates_{0};
  std::atomic<uint64_t> gaps_{0};
  std::thread thread_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LIVE_FEED_CLIENT_H_
