#include "trainscope/client/snapshot_client.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "zmq_handshake_monitor.h"
#include "zmq_sockets.h"

namespace trainscope::client {

SnapshotClient::SnapshotClient(std::string endpoint, const std::atomic<bool>* stop,
                               ClientSecurity security)
    : endpoint_(std::move(endpoint)), stop_(stop), security_(std::move(security)), context_(1) {}

SnapshotClient::~SnapshotClient() { context_.close(); }

absl::StatusOr<trainscope::v1::FeedSnapshot> SnapshotClient::Request(
    const trainscope::v1::SnapshotRequest& message, absl::Duration timeout) {
  try {
    zmq::socket_t request(context_, zmq::socket_type::req);
    ConfigureSocket(&request, endpoint_, security_);
    // Declared after the socket: stops monitoring before the socket closes.
    ZmqHandshakeMonitor monitor(&context_, &request,
                                absl::StrCat("the snapshot server at ", endpoint_));
    request.connect(endpoint_);
    const std::string bytes = message.SerializeAsString();
    // A REQ socket queues the request until connected; send never blocks here.
    request.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
    if (!WaitReadable(&request, timeout, stop_)) {
      if (stopped()) return absl::CancelledError("interrupted");
      if (std::optional<std::string> failure = monitor.Failure(); failure.has_value()) {
        return absl::UnauthenticatedError(*failure);
      }
      return absl::UnavailableError(absl::StrCat(
          "no snapshot from ", endpoint_, " within ", absl::FormatDuration(timeout),
          " (is trainscope-collector running? set --snapshot or TRAINSCOPE_SNAPSHOT)"));
    }
    zmq::message_t reply;
    if (!request.recv(reply, zmq::recv_flags::dontwait)) {
      return absl::UnavailableError(absl::StrCat("no snapshot from ", endpoint_));
    }
    trainscope::v1::FeedSnapshot snapshot;
    if (!snapshot.ParseFromArray(reply.data(), static_cast<int>(reply.size()))) {
      return absl::DataLossError(
          absl::StrCat("the reply from ", endpoint_, " is not a valid FeedSnapshot"));
    }
    return snapshot;
  } catch (const zmq::error_t& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot ask '", endpoint_, "' for a snapshot: ", error.what(),
                     " (expected a ZeroMQ endpoint such as tcp://127.0.0.1:7072)"));
  }
}

}  // namespace trainscope::client
