#include "trainscope/collector/adapters/zmq_feed_publisher.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "trainscope/collector/adapters/zap_authenticator.h"
#include "zmq.hpp"

namespace trainscope::collector {

struct ZmqFeedPublisher::Sockets {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::xpub};
  zmq::socket_t rep{context, zmq::socket_type::rep};
  std::unique_ptr<ZapAuthenticator> zap;  // with Options::curve_clients
};

absl::StatusOr<std::unique_ptr<ZmqFeedPublisher>> ZmqFeedPublisher::Bind(Options options) {
  auto sockets = std::make_unique<Sockets>();
  try {
    sockets->pub.set(zmq::sockopt::linger, 0);
    sockets->pub.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
    sockets->rep.set(zmq::sockopt::linger, 0);
    if (options.curve.has_value()) {
      for (zmq::socket_t* socket : {&sockets->pub, &sockets->rep}) {
        socket->set(zmq::sockopt::curve_server, 1);
        socket->set(zmq::sockopt::curve_secretkey, options.curve->secret_key);
      }
    }
  } catch (const zmq::error_t& e) {
    return absl::InternalError(absl::StrCat("cannot configure ZeroMQ sockets: ", e.what()));
  }
  if (options.curve.has_value() && !options.curve_clients.empty()) {
    // Bound before the sockets, so no handshake happens without it.
    absl::StatusOr<std::unique_ptr<ZapAuthenticator>> zap =
        ZapAuthenticator::Bind(&sockets->context, options.curve_clients);
    if (!zap.ok()) return zap.status();
    sockets->zap = std::move(*zap);
  }
  auto bind = [](zmq::socket_t& socket, const std::string& endpoint,
                 absl::string_view what) -> absl::StatusOr<std::string> {
    try {
      socket.bind(endpoint);
      return socket.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      return absl::UnavailableError(
          absl::StrCat("cannot bind the ", what, " to '", endpoint, "': ", e.what()));
    }
  };
  absl::StatusOr<std::string> feed =
      bind(sockets->pub, options.feed_endpoint, "live feed (--feed)");
  if (!feed.ok()) return feed.status();
  absl::StatusOr<std::string> snapshot =
      bind(sockets->rep, options.snapshot_endpoint, "snapshot socket (--snapshot)");
  if (!snapshot.ok()) return snapshot.status();
  std::unique_ptr<ZmqFeedPublisher> publisher(
      new ZmqFeedPublisher(std::move(options), std::move(sockets)));
  publisher->feed_endpoint_ = *feed;
  publisher->snapshot_endpoint_ = *snapshot;
  return publisher;
}

ZmqFeedPublisher::ZmqFeedPublisher(Options options, std::unique_ptr<Sockets> sockets)
    : options_(std::move(options)), sockets_(std::move(sockets)) {}

ZmqFeedPublisher::~ZmqFeedPublisher() { Stop(); }

void ZmqFeedPublisher::Start(SnapshotFn snapshot) {
  snapshot_ = std::move(snapshot);
  // Starting a thread is a full barrier: the sockets move to them safely.
  thread_ = std::thread([this] { RunFeed(); });
  snapshot_thread_ = std::thread([this] { RunSnapshots(); });
}

void ZmqFeedPublisher::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  sockets_.reset();
}

uint64_t ZmqFeedPublisher::clients_refused() const {
  return clients_refused_.load(std::memory_order_relaxed);
}

void ZmqFeedPublisher::Publish(v1::FeedUpdate update) {
  {
    base::MutexLock lock(&mu_);
    if (queue_.size() < options_.max_queued_updates) {
      queue_.push_back(std::move(update));
      return;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
}

void ZmqFeedPublisher::RunFeed() {
  while (true) {
    const bool stopping = stop_.load();
    bool idle = false;
    {
      base::MutexLock lock(&mu_);
      idle = queue_.empty();
    }
    zmq::pollitem_t items[] = {
        {sockets_->pub.handle(), 0, ZMQ_POLLIN, 0},
        {sockets_->zap ? sockets_->zap->socket().handle() : nullptr, 0, ZMQ_POLLIN, 0}};
    try {
      // Short timeout: pipelines cannot wake a ZeroMQ poll, and Stop must be quick.
      zmq::poll(items, sockets_->zap ? 2 : 1, std::chrono::milliseconds(idle && !stopping ? 5 : 0));
    } catch (const zmq::error_t&) {
      // EINTR: poll again.
    }
    if (sockets_->zap && (items[1].revents & ZMQ_POLLIN)) {
      sockets_->zap->Serve();
      clients_refused_.store(sockets_->zap->refused(), std::memory_order_relaxed);
    }
    if (items[0].revents & ZMQ_POLLIN) ReadSubscriptions();
    SendQueued();
    if (stopping) break;
  }
}

void ZmqFeedPublisher::RunSnapshots() {
  while (!stop_.load()) {
    zmq::pollitem_t items[] = {{sockets_->rep.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      // The timeout only bounds how long Stop waits for this thread.
      zmq::poll(items, 1, std::chrono::milliseconds(50));
    } catch (const zmq::error_t&) {
      // EINTR: poll again.
    }
    if (items[0].revents & ZMQ_POLLIN) ServeSnapshot();
  }
}

void ZmqFeedPublisher::SendQueued() {
  std::deque<v1::FeedUpdate> updates;
  {
    base::MutexLock lock(&mu_);
    updates.swap(queue_);
  }
  std::string payload;
  for (const v1::FeedUpdate& update : updates) {
    const std::string topic = FeedTopic(update);
    update.SerializeToString(&payload);
    try {
      // PUB never blocks: past the high-water mark ZeroMQ drops for that subscriber.
      sockets_->pub.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      sockets_->pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
      published_.fetch_add(1, std::memory_order_relaxed);
    } catch (const zmq::error_t&) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool ZmqFeedPublisher::Wants(absl::string_view topic) const {
  base::MutexLock lock(&subscriptions_mu_);
  for (const std::string& prefix : subscriptions_) {
    if (absl::StartsWith(topic, prefix)) return true;
  }
  return false;
}

void ZmqFeedPublisher::ReadSubscriptions() {
  try {
    zmq::message_t message;
    while (sockets_->pub.recv(message, zmq::recv_flags::dontwait)) {
      if (message.size() == 0) continue;
      const char* data = static_cast<const char*>(message.data());
      std::string prefix(data + 1, message.size() - 1);
      base::MutexLock lock(&subscriptions_mu_);
      if (data[0] == 1) {
        subscriptions_.insert(std::move(prefix));
      } else if (data[0] == 0) {
        subscriptions_.erase(prefix);
      }
    }
  } catch (const zmq::error_t&) {
    // EINTR: read the rest at the next poll.
  }
}

void ZmqFeedPublisher::ServeSnapshot() {
  zmq::message_t request;
  try {
    if (!sockets_->rep.recv(request, zmq::recv_flags::dontwait)) return;
    // A REP socket must answer once per request: read any extra frames first.
    bool extra_frames = false;
    while (sockets_->rep.get(zmq::sockopt::rcvmore)) {
      zmq::message_t more;
      (void)sockets_->rep.recv(more, zmq::recv_flags::none);
      extra_frames = true;
    }
    v1::SnapshotRequest parsed;
    v1::FeedSnapshot reply;
    if (extra_frames || !parsed.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
      reply.set_error(
          absl::StrCat("malformed request: expected one frame holding a serialized "
                       "trainscope.v1.SnapshotRequest, got ",
                       request.size(), " bytes", extra_frames ? " and more frames" : ""));
    } else {
      reply = snapshot_ ? snapshot_(parsed) : v1::FeedSnapshot();
    }
    const std::string payload = reply.SerializeAsString();
    sockets_->rep.send(zmq::buffer(payload), zmq::send_flags::none);
    snapshots_served_.fetch_add(1, std::memory_order_relaxed);
  } catch (const zmq::error_t&) {
    // The requester went away mid-exchange; REP recovers on the next request.
  }
}

}  // namespace trainscope::collector
