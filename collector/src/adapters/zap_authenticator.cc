#include "trainscope/collector/adapters/zap_authenticator.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainscope/security/curve_keys.h"
#include "zmq_addon.hpp"

namespace trainscope::collector {

absl::StatusOr<std::unique_ptr<ZapAuthenticator>> ZapAuthenticator::Bind(
    zmq::context_t* context, std::set<std::string> allowed) {
  try {
    zmq::socket_t socket(*context, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind("inproc://zeromq.zap.01");
    return std::unique_ptr<ZapAuthenticator>(
        new ZapAuthenticator(std::move(socket), std::move(allowed)));
  } catch (const zmq::error_t& e) {
    return absl::InternalError(
        absl::StrCat("cannot start the CURVE authenticator (ZAP): ", e.what()));
  }
}

ZapAuthenticator::ZapAuthenticator(zmq::socket_t socket, std::set<std::string> allowed)
    : socket_(std::move(socket)), allowed_(std::move(allowed)) {}

void ZapAuthenticator::Serve() {
  try {
    while (true) {
      std::vector<zmq::message_t> request;
      if (!zmq::recv_multipart(socket_, std::back_inserter(request), zmq::recv_flags::dontwait)) {
        return;
      }
      // version, request id, domain, address, identity, mechanism, credentials...
      std::string status = "400";
      std::string text = "malformed ZAP request";
      std::string user;
      if (request.size() >= 6 && request[0].to_string_view() == "1.0") {
        const std::string mechanism = request[5].to_string();
        if (mechanism != "CURVE" || request.size() < 7) {
          text = absl::StrCat("mechanism ", mechanism, " refused: this port needs CURVE");
        } else {
          const std::string key = security::CurveKeyToZ85(request[6].to_string());
          if (allowed_.count(key) > 0) {
            status = "200";
            text = "OK";
            user = key;
          } else {
            text = "this client's CURVE public key is not on the collector's --curve-client-keys";
          }
        }
      }
      (status == "200" ? accepted_ : refused_).fetch_add(1, std::memory_order_relaxed);
      const std::string version = "1.0";
      const std::string request_id = request.size() > 1 ? request[1].to_string() : "";
      std::vector<zmq::const_buffer> reply = {zmq::buffer(version), zmq::buffer(request_id),
                                              zmq::buffer(status),  zmq::buffer(text),
                                              zmq::buffer(user),    zmq::const_buffer()};
      zmq::send_multipart(socket_, reply);
    }
  } catch (const zmq::error_t&) {
    // EINTR or a closing context: the pending request is answered next time
    // (or the handshake fails, which refuses the client).
  }
}

}  // namespace trainscope::collector
