#include "trainscope/client/zmq_feed_source.h"

#include <cerrno>
#include <vector>
#include <zmq_addon.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "zmq_handshake_monitor.h"
#include "zmq_sockets.h"

namespace trainscope::client {

ZmqFeedSource::ZmqFeedSource(std::string feed_endpoint, std::string snapshot_endpoint,
                             const std::atomic<bool>* stop, ClientSecurity security)
    : feed_endpoint_(std::move(feed_endpoint)),
      stop_(stop),
      security_(std::move(security)),
      snapshots_(std::move(snapshot_endpoint), stop, security_),
      context_(1) {}

ZmqFeedSource::~ZmqFeedSource() {
  monitor_.reset();
  subscriber_.reset();
  context_.close();
}

absl::Status ZmqFeedSource::Subscribe(const std::string& topic_prefix) {
  try {
    if (subscriber_ == nullptr) {
      auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::sub);
      ConfigureSocket(socket.get(), feed_endpoint_, security_);
      // After the socket: if connect throws, it stops monitoring before the socket closes.
      auto monitor = std::make_unique<ZmqHandshakeMonitor>(
          &context_, socket.get(), absl::StrCat("the live feed at ", feed_endpoint_));
      // Deep enough to ride out a burst while the terminal is slow; past it
      // ZeroMQ drops and the follower sees a gap and re-snapshots.
      socket->set(zmq::sockopt::rcvhwm, 100000);
      socket->connect(feed_endpoint_);
      subscriber_ = std::move(socket);
      monitor_ = std::move(monitor);
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
      // Silence from a feed that refused the handshake is an error, not a quiet job.
      if (std::optional<std::string> failure = monitor_->Failure(); failure.has_value()) {
        return absl::UnauthenticatedError(*failure);
      }
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
  return snapshots_.Request(message, timeout);
}

}  // namespace trainscope::client
