#include "trainscope/cli/zmq_feed_source.h"

#include <algorithm>
#include <cerrno>
#include <vector>
#include <zmq_addon.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::cli {
namespace {

constexpr absl::Duration kStopCheckInterval = absl::Milliseconds(100);

void ConfigureSocket(zmq::socket_t* socket, const std::string& endpoint) {
  socket->set(zmq::sockopt::linger, 0);
  socket->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxMessageBytes));
  if (endpoint.find('[') != std::string::npos) socket->set(zmq::sockopt::ipv6, 1);
}

// Waits until `socket` is readable, `timeout` passes or `stop` is raised.
// Returns whether it is readable. EINTR (a signal) counts as "not yet".
bool WaitReadable(zmq::socket_t* socket, absl::Duration timeout, const std::atomic<bool>* stop) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    const auto slice = std::chrono::milliseconds(
        std::max<int64_t>(1, absl::ToInt64Milliseconds(std::min(left, kStopCheckInterval))));
    std::vector<zmq::pollitem_t> items = {{socket->handle(), 0, ZMQ_POLLIN, 0}};
    try {
      if (zmq::poll(items, slice) > 0 && (items[0].revents & ZMQ_POLLIN)) return true;
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) throw;
    }
  }
}

}  // namespace

ZmqFeedSource::ZmqFeedSource(std::string feed_endpoint, std::string snapshot_endpoint,
                             const std::atomic<bool>* stop)
    : feed_endpoint_(std::move(feed_endpoint)),
      snapshot_endpoint_(std::move(snapshot_endpoint)),
      stop_(stop),
      context_(1) {}

ZmqFeedSource::~ZmqFeedSource() {
  subscriber_.reset();
  context_.close();
}

absl::Status ZmqFeedSource::Subscribe(const std::string& topic_prefix) {
  try {
    if (subscriber_ == nullptr) {
      auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::sub);
      ConfigureSocket(socket.get(), feed_endpoint_);
      // Deep enough to ride out a burst while the terminal is slow; past it
      // ZeroMQ drops and the follower sees a gap and re-snapshots.
      socket->set(zmq::sockopt::rcvhwm, 100000);
      socket->connect(feed_endpoint_);
      subscriber_ = std::move(socket);
    }
    subscriber_->set(zmq::sockopt::subscribe, topic_prefix);
  } catch (const zmq::error_t& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot subscribe to the feed at '", feed_endpoint_, "': ", error.what(),
                     " (expected a ZeroMQ endpoint such as tcp://127.0.0.1:7071)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> ZmqFeedSource::Receive(
    absl::Duration timeout) {
  if (subscriber_ == nullptr) return absl::FailedPreconditionError("Receive before Subscribe");
  try {
    if (!WaitReadable(subscriber_.get(), timeout, stop_)) {
      return std::optional<trainscope::v1::FeedUpdate>();
    }
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(*subscriber_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return std::optional<trainscope::v1::FeedUpdate>();
    }
    if (frames.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("feed message with ", frames.size(),
                                                     " frames (expected 2: topic, FeedUpdate)"));
    }
    trainscope::v1::FeedUpdate update;
    if (!update.ParseFromArray(frames[1].data(), static_cast<int>(frames[1].size()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed message on topic '", frames[0].to_string(), "' is not a valid FeedUpdate"));
    }
    return std::optional<trainscope::v1::FeedUpdate>(std::move(update));
  } catch (const zmq::error_t& error) {
    if (error.num() == EINTR) return std::optional<trainscope::v1::FeedUpdate>();
    return absl::InternalError(absl::StrCat("feed at ", feed_endpoint_, ": ", error.what()));
  }
}

absl::StatusOr<trainscope::v1::FeedSnapshot> ZmqFeedSource::RequestSnapshot(
    const std::string& job_id, absl::Duration timeout) {
  trainscope::v1::SnapshotRequest message;
  message.set_job_id(job_id);
  return Request(message, timeout);
}

absl::StatusOr<trainscope::v1::FeedSnapshot> ZmqFeedSource::Request(
    const trainscope::v1::SnapshotRequest& message, absl::Duration timeout) {
  try {
    zmq::socket_t request(context_, zmq::socket_type::req);
    ConfigureSocket(&request, snapshot_endpoint_);
    request.connect(snapshot_endpoint_);
    const std::string bytes = message.SerializeAsString();
    // A REQ socket queues the request until connected; send never blocks here.
    request.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
    if (!WaitReadable(&request, timeout, stop_)) {
      if (stopped()) return absl::CancelledError("interrupted");
      return absl::UnavailableError(absl::StrCat(
          "no snapshot from ", snapshot_endpoint_, " within ", absl::FormatDuration(timeout),
          " (is trainscope-collector running? set --snapshot or TRAINSCOPE_SNAPSHOT)"));
    }
    zmq::message_t reply;
    if (!request.recv(reply, zmq::recv_flags::dontwait)) {
      return absl::UnavailableError(absl::StrCat("no snapshot from ", snapshot_endpoint_));
    }
    trainscope::v1::FeedSnapshot snapshot;
    if (!snapshot.ParseFromArray(reply.data(), static_cast<int>(reply.size()))) {
      return absl::DataLossError(
          absl::StrCat("the reply from ", snapshot_endpoint_, " is not a valid FeedSnapshot"));
    }
    return snapshot;
  } catch (const zmq::error_t& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot ask '", snapshot_endpoint_, "' for a snapshot: ", error.what(),
                     " (expected a ZeroMQ endpoint such as tcp://127.0.0.1:7072)"));
  }
}

}  // namespace trainscope::cli
