// `trainscope tail` in-process against real ZeroMQ sockets standing in for
// the collector's feed (PUB) and snapshot server (REP).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "trainscope/cli/subcommands.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class TailCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pub_.set(zmq::sockopt::linger, 0);
    pub_.bind("tcp://127.0.0.1:*");
    rep_.set(zmq::sockopt::linger, 0);
    rep_.bind("tcp://127.0.0.1:*");
    feed_ = pub_.get(zmq::sockopt::last_endpoint);
    snapshot_ = rep_.get(zmq::sockopt::last_endpoint);
    // Answers snapshot requests with the last published sequence.
    snapshot_server_ = std::thread([this] {
      while (!done_) {
        std::vector<zmq::pollitem_t> items = {{rep_.handle(), 0, ZMQ_POLLIN, 0}};
        if (zmq::poll(items, std::chrono::milliseconds(20)) == 0) continue;
        zmq::message_t request;
        if (!rep_.recv(request)) continue;
        trainscope::v1::FeedSnapshot snapshot;
        trainscope::v1::JobStatus* job = snapshot.add_jobs();
        job->mutable_summary()->set_job_id("j");
        job->set_feed_sequence(published_.load());
        const std::string reply = snapshot.SerializeAsString();
        rep_.send(zmq::buffer(reply), zmq::send_flags::none);
        ++snapshots_served_;
      }
    });
  }
  void TearDown() override {
    done_ = true;
    snapshot_server_.join();
  }

  // Publishes updates 1, 2, 3, ... (odd: rank, even: job) every 10 ms until
  // `stop`; the first ones may be lost while the subscription settles.
  std::thread StartPublishing(std::atomic<bool>* stop) {
    return std::thread([this, stop] {
      while (!*stop) {
        const uint64_t sequence = published_ + 1;
        trainscope::v1::FeedUpdate update;
        update.set_job_id("j");
        update.set_sequence(sequence);
        std::string topic;
        if (sequence % 2 == 1) {
          update.mutable_rank()->set_rank(0);
          update.mutable_rank()->set_host("h");
          update.mutable_rank()->set_events_received(sequence * 100);
          topic = "j/rank";
        } else {
          update.mutable_job()->set_job_id("j");
          topic = "j/job";
        }
        const std::string body = update.SerializeAsString();
        pub_.send(zmq::buffer(topic), zmq::send_flags::sndmore);
        pub_.send(zmq::buffer(body), zmq::send_flags::none);
        published_ = sequence;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  int Tail(std::vector<std::string> args) {
    args.insert(args.end(), {"--feed", feed_, "--snapshot", snapshot_, "--timeout", "5"});
    CommandContext ctx;
    ctx.out = &out_;
    ctx.err = &err_;
    return RunTailCommand(args, ctx);
  }

  zmq::context_t context_{1};
  zmq::socket_t pub_{context_, zmq::socket_type::pub};
  zmq::socket_t rep_{context_, zmq::socket_type::rep};
  std::string feed_;
  std::string snapshot_;
  std::atomic<uint64_t> published_{0};
  std::atomic<int> snapshots_served_{0};
  std::atomic<bool> done_{false};
  std::thread snapshot_server_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(TailCommandTest, SnapshotThenCountedUpdatesOfTheChosenKind) {
  std::atomic<bool> stop{false};
  std::thread publisher = StartPublishing(&stop);
  const int code = Tail({"j", "--kinds", "rank", "--count", "3", "--for", "20"});
  stop = true;
  publisher.join();
  EXPECT_EQ(code, 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("snapshot of job j at #"));
  // Exactly three update lines, all rank updates with increasing odd sequences.
  std::istringstream lines(out);
  std::string line;
  std::vector<uint64_t> sequences;
  while (std::getline(lines, line)) {
    if (line.find("  rank     rank 0") == std::string::npos) continue;
    const size_t hash = line.find('#');
    sequences.push_back(std::stoull(line.substr(hash + 1)));
  }
  ASSERT_EQ(sequences.size(), 3u) << out;
  for (size_t i = 0; i < sequences.size(); ++i) {
    EXPECT_EQ(sequences[i] % 2, 1u);
    if (i > 0) {
      EXPECT_GT(sequences[i], sequences[i - 1]);
    }
  }
  EXPECT_THAT(out, Not(HasSubstr("  job      ")));
}

TEST_F(TailCommandTest, JsonLines) {
  std::atomic<bool> stop{false};
  std::thread publisher = StartPublishing(&stop);
  const int code = Tail({"j", "--json", "--count", "2", "--for", "20"});
  stop = true;
  publisher.join();
  EXPECT_EQ(code, 0) << err_.str();
  std::istringstream lines(out_.str());
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_FALSE(all.empty());
  EXPECT_THAT(all[0], testing::StartsWith("{\"snapshot\":{"));
  // A gap (updates published while the subscription was settling) adds a
  // re-snapshot line; updates are exactly --count.
  int updates = 0;
  for (const std::string& json : all) {
    if (json.rfind("{\"update\":{\"job_id\":\"j\"", 0) == 0) {
      ++updates;
    } else {
      EXPECT_THAT(json, testing::StartsWith("{\"snapshot\":{"));
    }
  }
  EXPECT_EQ(updates, 2) << out_.str();
}

TEST_F(TailCommandTest, QuietFeedSaysSoAndStopsAfterTheDuration) {
  const int code = Tail({"j", "--for", "0.6", "--quiet-after", "0.2"});
  EXPECT_EQ(code, 0);
  EXPECT_THAT(err_.str(), HasSubstr("no updates for 200ms on the feed at " + feed_));
  EXPECT_THAT(out_.str(), HasSubstr("snapshot of job j at #0"));
}

TEST_F(TailCommandTest, StopFlagEndsIt) {
  std::atomic<bool> stop_tail{true};
  CommandContext ctx;
  ctx.out = &out_;
  ctx.err = &err_;
  ctx.stop = &stop_tail;
  EXPECT_EQ(RunTailCommand({"j", "--feed", feed_, "--snapshot", snapshot_}, ctx), 0);
}

}  // namespace
}  // namespace trainscope::cli
