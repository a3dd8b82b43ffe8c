// How the client library's ZeroMQ sockets are set up and waited on, for
// ZmqFeedSource (the SUB socket) and SnapshotClient (a REQ socket per
// request): the same options and the same interruptible wait for both.
//
// Usage:
//   ConfigureSocket(&socket, endpoint);
//   if (WaitReadable(&socket, absl::Seconds(5), stop)) socket.recv(...);
//
// Threading: each call uses only the socket it is given, on the calling
// thread (the socket's own).
#ifndef TRAINSCOPE_CLIENT_SRC_ZMQ_SOCKETS_H_
#define TRAINSCOPE_CLIENT_SRC_ZMQ_SOCKETS_H_

#include <atomic>
#include <string>
#include <zmq.hpp>

#include "absl/time/time.h"
#include "trainscope/client/client_security.h"

namespace trainscope::client {

// Linger 0 (closing never blocks), the protocol's message size cap, IPv6 for
// a bracketed address, and CURVE when `security` has the collector's key.
void ConfigureSocket(zmq::socket_t* socket, const std::string& endpoint,
                     const ClientSecurity& security = {});

// Waits until `socket` is readable, `timeout` passes or `stop` (may be null)
// is raised, checking `stop` every 100 ms. Returns whether it is readable.
// EINTR (a signal) counts as "not yet".
bool WaitReadable(zmq::socket_t* socket, absl::Duration timeout, const std::atomic<bool>* stop);

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_SRC_ZMQ_SOCKETS_H_
