// The live feed over ZeroMQ: a PUB socket for updates and a REP socket for
// snapshots, each owned by its own thread (ZeroMQ sockets are not
// thread-safe). A snapshot query can take seconds (a heavy Marey query of a
// big job); on a thread of its own it never delays the feed.
//
// Usage:
//   auto publisher = ZmqFeedPublisher::Bind({.feed_endpoint = "tcp://127.0.0.1:*",
//                                            .snapshot_endpoint = "tcp://127.0.0.1:*"});
//   (*publisher)->Start([&](const v1::SnapshotRequest& r) { return registry.Snapshot(r, 2s); });
//   (*publisher)->Publish(update);   // from any pipeline thread, never blocks
//   (*publisher)->Stop();
//
// The feed socket is an XPUB: it learns the subscribers' topic prefixes, so
// Wants(topic) can tell producers that nobody would receive an update.
//
// Messages on PUB are two frames: ["<job>/<kind>", serialized FeedUpdate].
// Pipelines hand updates over through a bounded queue; when it is full the
// update is dropped and counted (subscribers see the sequence gap and ask for
// a snapshot), and PUB's send high-water mark drops for slow subscribers, so
// ingest never waits for a viewer. REP answers each SnapshotRequest with a
// FeedSnapshot (error set for a bad request or an unknown job).
//
// With Options::curve both sockets are CURVE servers (encrypted; a client
// must know the collector's public key), and with curve_clients a
// ZapAuthenticator on the worker thread admits only the listed client keys.
//
// Threading: Publish and the counters are thread-safe; Bind, Start and Stop
// belong to the owner.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_ZMQ_FEED_PUBLISHER_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_ZMQ_FEED_PUBLISHER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/publish/feed_sink.h"
#include "trainscope/security/curve_keys.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::collector {

class ZmqFeedPublisher final : public FeedSink {
 public:
  struct Options {
    std::string feed_endpoint = "tcp://127.0.0.1:7071";  // "tcp://127.0.0.1:*": any port
    std::string snapshot_endpoint = "tcp://127.0.0.1:7072";
    size_t max_queued_updates = 1u << 16;
    int send_high_water_mark = 100000;  // messages per subscriber
    // The collector's CURVE key pair (--curve-secret-key); unset: no encryption.
    std::optional<security::CurveKeyPair> curve;
    // Z85 public keys of the clients allowed (--curve-client-keys); empty with
    // curve set: any client that knows the collector's public key.
    std::set<std::string> curve_clients;
  };
  using SnapshotFn =
      std::function<trainscope::v1::FeedSnapshot(const trainscope::v1::SnapshotRequest&)>;

  // Binds both sockets now, so a bad or busy endpoint fails here, by name.
  static absl::StatusOr<std::unique_ptr<ZmqFeedPublisher>> Bind(Options options);
  ~ZmqFeedPublisher() override;

  void Start(SnapshotFn snapshot);
  void Stop();  // sends what is queued, closes the sockets

  void Publish(trainscope::v1::FeedUpdate update) override;
  // Some subscriber's prefix matches `topic` (as the worker thread last read
  // the subscriptions).
  bool Wants(absl::string_view topic) const override;

  // The endpoints actually bound (ports resolved).
  const std::string& feed_endpoint() const { return feed_endpoint_; }
  const std::string& snapshot_endpoint() const { return snapshot_endpoint_; }

  uint64_t published() const { return published_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t snapshots_served() const { return snapshots_served_.load(std::memory_order_relaxed); }
  // CURVE handshakes refused by the client list (0 without one).
  uint64_t clients_refused() const;

 private:
  struct Sockets;
  ZmqFeedPublisher(Options options, std::unique_ptr<Sockets> sockets);
  void RunFeed();       // the feed thread: PUB and the ZAP handler
  void RunSnapshots();  // the snapshot thread: REP
  void SendQueued();
  void ServeSnapshot();
  void ReadSubscriptions();

  const Options options_;
  // After Start, pub and zap belong to the feed thread, rep to the snapshot
  // thread.
  std::unique_ptr<Sockets> sockets_;
  std::string feed_endpoint_;
  std::string snapshot_endpoint_;
  SnapshotFn snapshot_;

  base::Mutex mu_;
  std::deque<trainscope::v1::FeedUpdate> queue_ ABSL_GUARDED_BY(mu_);
  mutable base::Mutex subscriptions_mu_;
  // XPUB reports a prefix's first subscription and its last unsubscription.
  absl::flat_hash_set<std::string> subscriptions_ ABSL_GUARDED_BY(subscriptions_mu_);

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> snapshots_served_{0};
  std::atomic<uint64_t> clients_refused_{0};  // copied from the ZapAuthenticator
  std::thread thread_;
  std::thread snapshot_thread_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_ZMQ_FEED_PUBLISHER_H_
