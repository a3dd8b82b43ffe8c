// ZmqFeedPublisher on loopback with raw ZeroMQ sockets: a snapshot query that
// takes long (a heavy Marey query of a big job) must not hold up the feed.
#include "trainscope/collector/adapters/zmq_feed_publisher.h"

#include <chrono>

#include "gtest/gtest.h"
#include "trainscope/base/mutex.h"
#include "zmq.hpp"

namespace trainscope::collector {
namespace {

// A snapshot function that blocks until Release() (or a deadline far past
// any wait of the test, so that a broken publisher fails the test instead
// of hanging it).
class BlockingSnapshot {
 public:
  v1::FeedSnapshot Serve(const v1::SnapshotRequest& request) {
    base::MutexLock lock(&mu_);
    entered_ = true;
    cv_.SignalAll();
    const absl::Time deadline = absl::Now() + absl::Seconds(90);
    while (!released_ && absl::Now() < deadline) cv_.WaitWithDeadline(&mu_, deadline);
    v1::FeedSnapshot reply;
    reply.set_error("answered " + request.job_id());
    return reply;
  }
  bool WaitEntered(absl::Duration timeout) {
    base::MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + timeout;
    while (!entered_ && absl::Now() < deadline) cv_.WaitWithDeadline(&mu_, deadline);
    return entered_;
  }
  void Release() {
    base::MutexLock lock(&mu_);
    released_ = true;
    cv_.SignalAll();
  }

 private:
  base::Mutex mu_;
  base::CondVar cv_;
  bool entered_ ABSL_GUARDED_BY(mu_) = false;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(ZmqFeedPublisherTest, ASlowSnapshotQueryDoesNotHoldUpTheFeed) {
  ZmqFeedPublisher::Options options;
  options.feed_endpoint = "tcp://127.0.0.1:*";
  options.snapshot_endpoint = "tcp://127.0.0.1:*";
  absl::StatusOr<std::unique_ptr<ZmqFeedPublisher>> publisher =
      ZmqFeedPublisher::Bind(std::move(options));
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  BlockingSnapshot snapshot;
  (*publisher)->Start([&](const v1::SnapshotRequest& r) { return snapshot.Serve(r); });

  zmq::context_t context;
  zmq::socket_t req(context, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.connect((*publisher)->snapshot_endpoint());
  v1::SnapshotRequest request;
  request.set_job_id("big-job");
  ASSERT_TRUE(req.send(zmq::buffer(request.SerializeAsString()), zmq::send_flags::none));
  ASSERT_TRUE(snapshot.WaitEntered(absl::Seconds(60))) << "the query never reached the server";

  // While the query runs, updates still reach a subscriber. The subscriber
  // may join late (ZeroMQ's slow joiner), so publish until one arrives.
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect((*publisher)->feed_endpoint());
  bool received = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (uint64_t sequence = 1; !received && absl::Now() < deadline; ++sequence) {
    v1::FeedUpdate update;
    update.set_sequence(sequence);
    update.set_job_id("other-job");
    update.mutable_job()->set_job_id("other-job");
    (*publisher)->Publish(update);
    zmq::pollitem_t items[] = {{sub.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 1, std::chrono::milliseconds(50));
    if (items[0].revents & ZMQ_POLLIN) {
      zmq::message_t topic;
      ASSERT_TRUE(sub.recv(topic, zmq::recv_flags::none));
      EXPECT_EQ(topic.to_string(), "other-job/job");
      received = true;
    }
  }
  EXPECT_TRUE(received) << "no feed update while a snapshot query was running";

  // The query still gets its answer once it finishes.
  snapshot.Release();
  zmq::message_t reply;
  ASSERT_TRUE(req.recv(reply, zmq::recv_flags::none));
  v1::FeedSnapshot parsed;
  ASSERT_TRUE(parsed.ParseFromArray(reply.data(), static_cast<int>(reply.size())));
  EXPECT_EQ(parsed.error(), "answered big-job");
  EXPECT_EQ((*publisher)->snapshots_served(), 1u);
  (*publisher)->Stop();
}

}  // namespace
}  // namespace trainscope::collector
