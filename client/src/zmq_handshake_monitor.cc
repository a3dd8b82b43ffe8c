#include "zmq_handshake_monitor.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace trainscope::client {
namespace {

std::atomic<uint64_t> g_next_monitor{0};

// `curve`: this client's socket speaks CURVE (it was given the server's key).
std::string Explain(const std::string& peer, uint16_t event, uint32_t value, bool curve) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    return absl::StrCat(peer, " refused this client's CURVE key (status ", value,
                        "): it is not on the collector's --curve-client-keys; give --curve-key "
                        "(TRAINSCOPE_CURVE_KEY) with a key the collector lists");
  }
  if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
    return absl::StrCat(
        peer,
        " refused the handshake: security mechanisms differ (a collector with CURVE "
        "needs --curve-server-key / TRAINSCOPE_CURVE_SERVER_KEY; one without it needs "
        "neither)");
  }
  if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) {
    return absl::StrCat(peer,
                        " failed the CURVE handshake: the collector's key is not the one given "
                        "in --curve-server-key (TRAINSCOPE_CURVE_SERVER_KEY)");
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && !curve) {
    // A CURVE server that reads this client's NULL greeting first drops the
    // connection before the client has read the server's: the same mismatch
    // as above, seen from the other side (which side wins is a race).
    return absl::StrCat(
        peer,
        " closed the connection during the handshake: security mechanisms differ (this "
        "client has no CURVE key; a collector with CURVE needs --curve-server-key / "
        "TRAINSCOPE_CURVE_SERVER_KEY) (",
        std::strerror(static_cast<int>(value)), ")");
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
    // The collector dropped the connection mid-handshake: what a CURVE server
    // does with a client that encrypted for another key.
    return absl::StrCat(peer,
                        " closed the connection during the handshake: is --curve-server-key "
                        "(TRAINSCOPE_CURVE_SERVER_KEY) the collector's public key? (",
                        std::strerror(static_cast<int>(value)), ")");
  }
  return absl::StrCat(peer, " failed the handshake (ZeroMQ protocol error 0x", absl::Hex(value),
                      "; check --curve-server-key and --curve-key)");
}

}  // namespace

ZmqHandshakeMonitor::ZmqHandshakeMonitor(zmq::context_t* context, zmq::socket_t* socket,
                                         std::string peer)
    : socket_(socket), peer_(std::move(peer)) {
  const std::string address =
      absl::StrCat("inproc://trainscope-handshake-", g_next_monitor.fetch_add(1));
  if (zmq_socket_monitor(socket->handle(), address.c_str(),
                         ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0) {
    return;  // without events, a timeout is reported as before
  }
  try {
    events_.emplace(*context, zmq::socket_type::pair);
    events_->set(zmq::sockopt::linger, 0);
    events_->connect(address);
  } catch (const zmq::error_t&) {
    events_.reset();
  }
}

ZmqHandshakeMonitor::~ZmqHandshakeMonitor() {
  if (events_.has_value()) zmq_socket_monitor(socket_->handle(), nullptr, 0);
}

std::optional<std::string> ZmqHandshakeMonitor::Failure() {
  if (!events_.has_value()) return failure_;
  try {
    while (true) {
      zmq::message_t header;
      if (!events_->recv(header, zmq::recv_flags::dontwait)) break;
      zmq::message_t endpoint;
      if (header.more()) (void)events_->recv(endpoint, zmq::recv_flags::none);
      if (header.size() < 6) continue;
      uint16_t event;
      uint32_t value;
      std::memcpy(&event, header.data(), sizeof(event));
      std::memcpy(&value, static_cast<const char*>(header.data()) + 2, sizeof(value));
      if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        failure_.reset();
      } else {
        int mechanism = ZMQ_NULL;
        size_t size = sizeof(mechanism);
        zmq_getsockopt(socket_->handle(), ZMQ_MECHANISM, &mechanism, &size);
        failure_ = Explain(peer_, event, value, mechanism == ZMQ_CURVE);
      }
    }
  } catch (const zmq::error_t&) {
    // EINTR: what was read stands.
  }
  return failure_;
}

}  // namespace trainscope::client
