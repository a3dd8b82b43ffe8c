// Asks the collector's snapshot server (ZeroMQ REP) one question at a time:
// a job's state, its steps, its Marey data, its alerts or its loss
// contribution (feed.proto's SnapshotRequest). Each request gets a fresh REQ
// socket (a REQ that timed out cannot be reused, so it is dropped).
//
// Usage:
//   SnapshotClient snapshots("tcp://127.0.0.1:7072", &stop);
//   absl::StatusOr<v1::FeedSnapshot> reply = snapshots.Request(request, absl::Seconds(10));
//
// A wait is bounded by its timeout and by `stop` (may be null; checked every
// 100 ms): UNAVAILABLE when no answer came, CANCELLED when stopped.
// Threading: one thread at a time (ZeroMQ sockets are not thread-safe).
#ifndef TRAINSCOPE_CLIENT_SNAPSHOT_CLIENT_H_
#define TRAINSCOPE_CLIENT_SNAPSHOT_CLIENT_H_

#include <atomic>
#include <string>
#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/client/client_security.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::client {

class SnapshotClient {
 public:
  // `security`: CURVE keys when the collector requires them (ClientSecurity).
  SnapshotClient(std::string endpoint, const std::atomic<bool>* stop,
                 ClientSecurity security = {});
  ~SnapshotClient();
  SnapshotClient(const SnapshotClient&) = delete;
  SnapshotClient& operator=(const SnapshotClient&) = delete;

  absl::StatusOr<trainscope::v1::FeedSnapshot> Request(
      const trainscope::v1::SnapshotRequest& request, absl::Duration timeout);

  const std::string& endpoint() const { return endpoint_; }

 private:
  bool stopped() const { return stop_ != nullptr && stop_->load(std::memory_order_relaxed); }

  std::string endpoint_;
  const std::atomic<bool>* stop_;
  ClientSecurity security_;
  zmq::context_t context_;
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_SNAPSHOT_CLIENT_H_
