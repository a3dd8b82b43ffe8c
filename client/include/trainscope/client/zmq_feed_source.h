// FeedSource over the collector's ZeroMQ endpoints: a SUB socket on the live
// feed (two-frame messages [topic, FeedUpdate]) and, for snapshots, a
// SnapshotClient on the snapshot server.
//
// Usage:
//   ZmqFeedSource source("tcp://127.0.0.1:7071", "tcp://127.0.0.1:7072", &stop);
//   RETURN_IF_ERROR(source.Subscribe("job-1/"));
//
// Every wait is bounded by its timeout and by `stop` (checked every 100 ms);
// sockets are closed with linger 0 so destruction never blocks.
// Threading: one thread (ZeroMQ sockets are not thread-safe).
#ifndef TRAINSCOPE_CLIENT_ZMQ_FEED_SOURCE_H_
#define TRAINSCOPE_CLIENT_ZMQ_FEED_SOURCE_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "trainscope/client/feed_source.h"
#include "trainscope/client/snapshot_client.h"

namespace trainscope::client {

class ZmqHandshakeMonitor;  // client/src: the socket's handshake events

class ZmqFeedSource : public FeedSource {
 public:
  // `security`: CURVE keys when the collector requires them (ClientSecurity).
  ZmqFeedSource(std::string feed_endpoint, std::string snapshot_endpoint,
                const std::atomic<bool>* stop, ClientSecurity security = {});
  ~ZmqFeedSource() override;

  absl::Status Subscribe(const std::string& topic_prefix) override;
  absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> Receive(
      absl::Duration timeout) override;
  absl::StatusOr<trainscope::v1::FeedSnapshot> RequestSnapshot(const std::string& job_id,
                                                               absl::Duration timeout) override;
  // Any request to the snapshot server: steps or Marey data too.
  absl::StatusOr<trainscope::v1::FeedSnapshot> Request(
      const trainscope::v1::SnapshotRequest& request, absl::Duration timeout);
  std::string Describe() const override { return feed_endpoint_; }

 private:
  std::string feed_endpoint_;
  const std::atomic<bool>* stop_;
  ClientSecurity security_;
  SnapshotClient snapshots_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> subscriber_;
  // Watches subscriber_'s handshakes (a refused CURVE key); reset before it.
  std::unique_ptr<ZmqHandshakeMonitor> monitor_;
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_ZMQ_FEED_SOURCE_H_
