#include "zmq_sockets.h"

#include <gtest/gtest.h>

#include <chrono>

#include "absl/time/clock.h"

namespace trainscope::client {
namespace {

class ZmqSocketsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigureSocket(&pull_, "tcp://127.0.0.1:*");
    pull_.bind("tcp://127.0.0.1:*");
    endpoint_ = pull_.get(zmq::sockopt::last_endpoint);
  }
  zmq::context_t context_{1};
  zmq::socket_t pull_{context_, zmq::socket_type::pull};
  std::string endpoint_;
};

TEST_F(ZmqSocketsTest, ConfiguredSocketsNeverLingerAndCapMessages) {
  EXPECT_EQ(pull_.get(zmq::sockopt::linger), 0);
  EXPECT_GT(pull_.get(zmq::sockopt::maxmsgsize), 0);
}

TEST_F(ZmqSocketsTest, WaitReadableSeesAMessage) {
  zmq::socket_t push(context_, zmq::socket_type::push);
  ConfigureSocket(&push, endpoint_);
  push.connect(endpoint_);
  push.send(zmq::str_buffer("x"), zmq::send_flags::none);
  EXPECT_TRUE(WaitReadable(&pull_, absl::Seconds(5), nullptr));
}

TEST_F(ZmqSocketsTest, WaitReadableGivesUpAtTheTimeoutOrWhenStopped) {
  const absl::Time start = absl::Now();
  EXPECT_FALSE(WaitReadable(&pull_, absl::Milliseconds(150), nullptr));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(140));
  std::atomic<bool> stop{true};
  const absl::Time stopped = absl::Now();
  EXPECT_FALSE(WaitReadable(&pull_, absl::Seconds(60), &stop));
  EXPECT_LT(absl::Now() - stopped, absl::Seconds(1));
}

}  // namespace
}  // namespace trainscope::client
