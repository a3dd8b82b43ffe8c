// ZeroMQ's authentication hook (ZAP, RFC 27) for the collector's CURVE
// ports: answers each CURVE handshake with 200 when the client's public key
// is on the allowed list and 400 otherwise, so a client that has the
// collector's public key but is not listed is refused during the handshake
// (before it can subscribe to the feed or ask for a snapshot).
//
// ZAP requests arrive on a REP socket bound to inproc://zeromq.zap.01 in the
// same context as the sockets it guards; libzmq consults it for every CURVE
// handshake once it is bound. Serve() answers what is pending without
// blocking, so the owner polls socket() with its own sockets (the feed
// publisher's worker thread) instead of running a thread of its own.
//
// Usage:
//   ASSIGN_OR_RETURN(auto zap, ZapAuthenticator::Bind(&context, allowed_keys));
//   zmq::pollitem_t item{zap->socket().handle(), 0, ZMQ_POLLIN, 0};  // with the others
//   if (item.revents & ZMQ_POLLIN) zap->Serve();
//
// Threading: one owner thread (ZeroMQ sockets are not thread-safe); the
// counters may be read from any thread.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_ZAP_AUTHENTICATOR_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_ZAP_AUTHENTICATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "zmq.hpp"

namespace trainscope::collector {

class ZapAuthenticator {
 public:
  // `allowed` holds Z85 public keys.
  static absl::StatusOr<std::unique_ptr<ZapAuthenticator>> Bind(zmq::context_t* context,
                                                               std::set<std::string> allowed);

  zmq::socket_t& socket() { return socket_; }
  // Answers every pending request.
  void Serve();

  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  ZapAuthenticator(zmq::socket_t socket, std::set<std::string> allowed);

  zmq::socket_t socket_;
  const std::set<std::string> allowed_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_ZAP_AUTHENTICATOR_H_
