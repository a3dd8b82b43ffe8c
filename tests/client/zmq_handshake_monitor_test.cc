#include "zmq_handshake_monitor.h"

#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace trainscope::client {
namespace {

// A CURVE server and a client without CURVE: whichever side reads the other's
// greeting first (the server dropping the connection, or the client seeing
// the server's mechanism) the reason given is the mismatch and its flag.
TEST(ZmqHandshakeMonitorTest, AClientWithoutCurveIsToldTheMechanismsDifferWhoeverNoticesFirst) {
  zmq::context_t context;
  char server_public[41], server_secret[41];
  ASSERT_EQ(zmq_curve_keypair(server_public, server_secret), 0);
  zmq::socket_t server(context, zmq::socket_type::rep);
  server.set(zmq::sockopt::linger, 0);
  server.set(zmq::sockopt::curve_server, 1);
  server.set(zmq::sockopt::curve_secretkey, std::string(server_secret));
  server.bind("tcp://127.0.0.1:*");
  const std::string endpoint = server.get(zmq::sockopt::last_endpoint);

  for (int attempt = 0; attempt < 5; ++attempt) {
    zmq::socket_t client(context, zmq::socket_type::req);
    client.set(zmq::sockopt::linger, 0);
    ZmqHandshakeMonitor monitor(&context, &client, "the snapshot server");
    client.connect(endpoint);
    std::optional<std::string> failure;
    // Generous: only a failed handshake ends the wait early.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(failure = monitor.Failure()) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(failure.has_value()) << "no failed handshake reported";
    EXPECT_NE(failure->find("security mechanisms differ"), std::string::npos) << *failure;
    EXPECT_NE(failure->find("--curve-server-key"), std::string::npos) << *failure;
  }
}

}  // namespace
}  // namespace trainscope::client
