#include "trainscope/client/snapshot_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <zmq.hpp>

namespace trainscope::client {
namespace {

using ::testing::HasSubstr;

TEST(SnapshotClientTest, SendsTheRequestAndReturnsTheReply) {
  zmq::context_t context(1);
  zmq::socket_t rep(context, zmq::socket_type::rep);
  rep.set(zmq::sockopt::linger, 0);
  rep.bind("tcp://127.0.0.1:*");
  const std::string endpoint = rep.get(zmq::sockopt::last_endpoint);
  std::thread server([&] {
    zmq::message_t request;
    if (!rep.recv(request)) return;
    trainscope::v1::SnapshotRequest parsed;
    parsed.ParseFromArray(request.data(), static_cast<int>(request.size()));
    trainscope::v1::FeedSnapshot snapshot;
    snapshot.set_error(parsed.job_id() + " steps from " +
                       std::to_string(parsed.steps().first_step()));
    const std::string reply = snapshot.SerializeAsString();
    rep.send(zmq::buffer(reply), zmq::send_flags::none);
  });
  SnapshotClient client(endpoint, nullptr);
  trainscope::v1::SnapshotRequest request;
  request.set_job_id("job-7");
  request.mutable_steps()->set_first_step(12);
  absl::StatusOr<trainscope::v1::FeedSnapshot> reply = client.Request(request, absl::Seconds(5));
  server.join();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->error(), "job-7 steps from 12");
  EXPECT_EQ(client.endpoint(), endpoint);
}

TEST(SnapshotClientTest, NobodyListeningIsUnavailableNamingTheEndpointAndTheFlag) {
  SnapshotClient client("tcp://127.0.0.1:1", nullptr);
  absl::StatusOr<trainscope::v1::FeedSnapshot> reply =
      client.Request(trainscope::v1::SnapshotRequest(), absl::Milliseconds(200));
  ASSERT_FALSE(reply.ok());
  EXPECT_TRUE(absl::IsUnavailable(reply.status()));
  EXPECT_THAT(reply.status().message(), HasSubstr("tcp://127.0.0.1:1"));
  EXPECT_THAT(reply.status().message(), HasSubstr("--snapshot"));
}

TEST(SnapshotClientTest, TheStopFlagCancelsTheWait) {
  std::atomic<bool> stop{true};
  SnapshotClient client("tcp://127.0.0.1:1", &stop);
  absl::StatusOr<trainscope::v1::FeedSnapshot> reply =
      client.Request(trainscope::v1::SnapshotRequest(), absl::Seconds(60));
  EXPECT_TRUE(absl::IsCancelled(reply.status()));
}

TEST(SnapshotClientTest, ABadEndpointIsInvalidArgumentWithAnExample) {
  SnapshotClient client("not-an-endpoint", nullptr);
  absl::StatusOr<trainscope::v1::FeedSnapshot> reply =
      client.Request(trainscope::v1::SnapshotRequest(), absl::Seconds(1));
  ASSERT_FALSE(reply.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(reply.status()));
  EXPECT_THAT(reply.status().message(), HasSubstr("not-an-endpoint"));
  EXPECT_THAT(reply.status().message(), HasSubstr("tcp://127.0.0.1:7072"));
}

}  // namespace
}  // namespace trainscope::client
