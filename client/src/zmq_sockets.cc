#include "zmq_sockets.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <vector>

#include "absl/time/clock.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::client {
namespace {

constexpr absl::Duration kStopCheckInterval = absl::Milliseconds(100);

}  // namespace

void ConfigureSocket(zmq::socket_t* socket, const std::string& endpoint,
                     const ClientSecurity& security) {
  socket->set(zmq::sockopt::linger, 0);
  if (!security.curve_server_key.empty() && security.curve_client.has_value()) {
    socket->set(zmq::sockopt::curve_serverkey, security.curve_server_key);
    socket->set(zmq::sockopt::curve_publickey, security.curve_client->public_key);
    socket->set(zmq::sockopt::curve_secretkey, security.curve_client->secret_key);
  }
  socket->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxMessageBytes));
  if (endpoint.find('[') != std::string::npos) socket->set(zmq::sockopt::ipv6, 1);
}

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

}  // namespace trainscope::client
