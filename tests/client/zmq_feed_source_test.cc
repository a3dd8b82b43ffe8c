#include "trainscope/client/zmq_feed_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace trainscope::client {
namespace {

using ::testing::HasSubstr;

trainscope::v1::FeedUpdate Update(const std::string& job, uint64_t sequence) {
  trainscope::v1::FeedUpdate update;
  update.set_job_id(job);
  update.set_sequence(sequence);
  update.mutable_job()->set_job_id(job);
  return update;
}

void Publish(zmq::socket_t& pub, const std::string& topic, const std::string& body) {
  pub.send(zmq::buffer(topic), zmq::send_flags::sndmore);
  pub.send(zmq::buffer(body), zmq::send_flags::none);
}

class ZmqFeedSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pub_.set(zmq::sockopt::linger, 0);
    pub_.bind("tcp://127.0.0.1:*");
    feed_ = pub_.get(zmq::sockopt::last_endpoint);
  }
  // Publishes `update` on `topic` until the source receives something (a SUB
  // joins asynchronously, so early messages are lost by design), at most 5 s.
  absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> PublishUntilReceived(
      ZmqFeedSource& source, const std::string& topic, const std::string& body) {
    absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> got;
    for (int i = 0; i < 100; ++i) {
      Publish(pub_, topic, body);
      got = source.Receive(absl::Milliseconds(50));
      if (!got.ok() || got->has_value()) return got;
    }
    return got;
  }

  zmq::context_t context_{1};
  zmq::socket_t pub_{context_, zmq::socket_type::pub};
  std::string feed_;
};

TEST_F(ZmqFeedSourceTest, ReceivesTwoFrameUpdatesForItsPrefixOnly) {
  ZmqFeedSource source(feed_, "tcp://127.0.0.1:1", nullptr);
  ASSERT_TRUE(source.Subscribe("j/").ok());
  // Warm up with the right topic, then check a neighbour's topic is filtered.
  auto first = PublishUntilReceived(source, "j/job", Update("j", 1).SerializeAsString());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->job_id(), "j");
  while (source.Receive(absl::Milliseconds(20))->has_value()) {
  }
  Publish(pub_, "jj/job", Update("jj", 1).SerializeAsString());
  Publish(pub_, "j/rank", Update("j", 2).SerializeAsString());
  auto next = source.Receive(absl::Seconds(2));
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->job_id(), "j");
  EXPECT_EQ((*next)->sequence(), 2u);
}

TEST_F(ZmqFeedSourceTest, MalformedMessagesAreInvalidArgument) {
  ZmqFeedSource source(feed_, "tcp://127.0.0.1:1", nullptr);
  ASSERT_TRUE(source.Subscribe("j/").ok());
  auto bad = PublishUntilReceived(source, "j/job", std::string("\xff\xff\xff", 3));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(), HasSubstr("j/job"));
}

TEST_F(ZmqFeedSourceTest, QuietFeedTimesOut) {
  ZmqFeedSource source(feed_, "tcp://127.0.0.1:1", nullptr);
  ASSERT_TRUE(source.Subscribe("j/").ok());
  auto got = source.Receive(absl::Milliseconds(50));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
}

TEST_F(ZmqFeedSourceTest, SnapshotRoundTrip) {
  zmq::socket_t rep(context_, zmq::socket_type::rep);
  rep.set(zmq::sockopt::linger, 0);
  rep.bind("tcp://127.0.0.1:*");
  const std::string endpoint = rep.get(zmq::sockopt::last_endpoint);
  std::thread server([&] {
    zmq::message_t request;
    if (!rep.recv(request)) return;
    trainscope::v1::SnapshotRequest parsed;
    parsed.ParseFromArray(request.data(), static_cast<int>(request.size()));
    trainscope::v1::FeedSnapshot snapshot;
    trainscope::v1::JobStatus* job = snapshot.add_jobs();
    job->mutable_summary()->set_job_id(parsed.job_id());
    job->set_feed_sequence(17);
    const std::string reply = snapshot.SerializeAsString();
    rep.send(zmq::buffer(reply), zmq::send_flags::none);
  });
  ZmqFeedSource source(feed_, endpoint, nullptr);
  absl::StatusOr<trainscope::v1::FeedSnapshot> snapshot =
      source.RequestSnapshot("job-7", absl::Seconds(5));
  server.join();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_EQ(snapshot->jobs_size(), 1);
  EXPECT_EQ(snapshot->jobs(0).summary().job_id(), "job-7");
  EXPECT_EQ(snapshot->jobs(0).feed_sequence(), 17u);
}

TEST_F(ZmqFeedSourceTest, SnapshotWithNobodyListeningIsUnavailableNamingTheEndpoint) {
  ZmqFeedSource source(feed_, "tcp://127.0.0.1:1", nullptr);
  absl::StatusOr<trainscope::v1::FeedSnapshot> snapshot =
      source.RequestSnapshot("j", absl::Milliseconds(200));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_TRUE(absl::IsUnavailable(snapshot.status()));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("tcp://127.0.0.1:1"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("--snapshot"));
}

TEST_F(ZmqFeedSourceTest, StopFlagCancelsASnapshotWait) {
  std::atomic<bool> stop{true};
  ZmqFeedSource source(feed_, "tcp://127.0.0.1:1", &stop);
  absl::StatusOr<trainscope::v1::FeedSnapshot> snapshot =
      source.RequestSnapshot("j", absl::Seconds(60));
  EXPECT_TRUE(absl::IsCancelled(snapshot.status()));
}

TEST_F(ZmqFeedSourceTest, BadEndpointIsAClearError) {
  ZmqFeedSource source("not-an-endpoint", "also-not", nullptr);
  absl::Status status = source.Subscribe("j/");
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("not-an-endpoint"));
  EXPECT_THAT(status.message(), HasSubstr("tcp://"));
}

}  // namespace
}  // namespace trainscope::client
