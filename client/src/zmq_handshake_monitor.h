// Why a ZeroMQ connection never delivers: ZeroMQ hides failed handshakes (a
// CURVE mismatch, a client key the collector does not list) behind silence,
// so SnapshotClient and ZmqFeedSource watch their socket's handshake events
// and turn a timeout into the reason.
//
// Usage:
//   ZmqHandshakeMonitor monitor(&context, &socket, "the snapshot server at X");  // before connect
//   socket.connect(endpoint);
//   ... on a timeout: if (std::optional<std::string> why = monitor.Failure()) return error(*why);
//
// Threading: the socket's thread (the monitor's PAIR socket is read there).
#ifndef TRAINSCOPE_CLIENT_SRC_ZMQ_HANDSHAKE_MONITOR_H_
#define TRAINSCOPE_CLIENT_SRC_ZMQ_HANDSHAKE_MONITOR_H_

#include <optional>
#include <string>
#include <zmq.hpp>

namespace trainscope::client {

class ZmqHandshakeMonitor {
 public:
  // `peer` names the other side in messages ("the snapshot server at tcp://...").
  ZmqHandshakeMonitor(zmq::context_t* context, zmq::socket_t* socket, std::string peer);
  ~ZmqHandshakeMonitor();
  ZmqHandshakeMonitor(const ZmqHandshakeMonitor&) = delete;
  ZmqHandshakeMonitor& operator=(const ZmqHandshakeMonitor&) = delete;

  // Reads the events so far; the last failed handshake (if no handshake
  // succeeded after it), explained with the flags that fix it.
  std::optional<std::string> Failure();

 private:
  zmq::socket_t* socket_;
  std::string peer_;
  std::optional<zmq::socket_t> events_;  // unset when monitoring could not start
  std::optional<std::string> failure_;
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_SRC_ZMQ_HANDSHAKE_MONITOR_H_
