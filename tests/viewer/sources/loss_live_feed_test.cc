// LiveFeedClient against a fake collector in this process (a ZeroMQ PUB for
// the feed, a REP answering snapshot requests from a real LossTracker): the
// history brings the loss list and the top item's snapshots, "<job>/maps"
// appends to the shown item, "<job>/loss" replaces the list, and
// RequestItem fetches another item's snapshots.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "loss_fixture.h"
#include "trainscope/base/mutex.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/viewer/live_feed_client.h"
#include "trainscope/viewer/viewer_state.h"

namespace trainscope::viewer {
namespace {

using testing::LossFixture;

class FakeCollector {
 public:
  explicit FakeCollector(const LossFixture* fixture) : fixture_(fixture) {
    for (zmq::socket_t* s : {&pub_, &rep_}) {
      s->set(zmq::sockopt::linger, 0);
      s->bind("tcp://127.0.0.1:*");
    }
    feed_ = pub_.get(zmq::sockopt::last_endpoint);
    snapshot_ = rep_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeCollector() {
    stop_ = true;
    thread_.join();
  }

  void Publish(const std::string& kind, trainscope::v1::FeedUpdate update) {
    update.set_job_id("j");
    update.set_sequence(++sequence_);
    const std::string body = update.SerializeAsString();
    const std::string topic = "j/" + kind;
    pub_.send(zmq::buffer(topic), zmq::send_flags::sndmore);
    pub_.send(zmq::buffer(body), zmq::send_flags::none);
  }
  std::set<uint64_t> items_asked() {
    base::MutexLock lock(&mu_);
    return items_asked_;
  }
  const std::string& feed() const { return feed_; }
  const std::string& snapshot() const { return snapshot_; }

 private:
  void Serve() {
    while (!stop_) {
      zmq::pollitem_t item{rep_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t message;
      if (!rep_.recv(message, zmq::recv_flags::dontwait)) continue;
      trainscope::v1::SnapshotRequest request;
      request.ParseFromArray(message.data(), static_cast<int>(message.size()));
      trainscope::v1::FeedSnapshot reply;
      trainscope::v1::JobStatus* job = reply.add_jobs();
      job->mutable_summary()->set_job_id("j");
      job->set_feed_sequence(sequence_.load());
      if (request.has_loss()) {
        std::optional<uint64_t> wanted;
        if (request.loss().want_item()) {
          wanted = request.loss().item();
          base::MutexLock lock(&mu_);
          items_asked_.insert(*wanted);
        }
        *reply.mutable_loss() = fixture_->Answer(wanted);
      }
      const std::string bytes = reply.SerializeAsString();
      rep_.send(zmq::buffer(bytes), zmq::send_flags::none);
    }
  }

  const LossFixture* fixture_;
  zmq::context_t context_{1};
  zmq::socket_t pub_{context_, zmq::socket_type::pub};
  zmq::socket_t rep_{context_, zmq::socket_type::rep};
  std::string feed_;
  std::string snapshot_;
  std::atomic<uint64_t> sequence_{0};
  std::atomic<bool> stop_{false};
  base::Mutex mu_;
  std::set<uint64_t> items_asked_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Applies what the client posted until `done` holds, at most 10 s.
template <typename Done>
bool ApplyUntil(
    FeedCoalescer* coalescer, ViewerState* state, Done done,
    const std::function<void()>& each = [] {}) {
  for (int i = 0; i < 200; ++i) {
    each();
    if (std::optional<FeedCoalescer::Delta> delta = coalescer->Take()) {
      state->Apply(std::move(*delta));
    }
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(LossLiveFeedTest, FollowsLossAndMapsAndFetchesAPickedItem) {
  const LossFixture fixture = testing::MakeLossFixture({});
  const trainscope::v1::LossAnswer top = fixture.Answer(151);
  FakeCollector collector(&fixture);
  FeedCoalescer coalescer;
  LiveFeedClient::Options options{collector.feed(), collector.snapshot(), "j", {}};
  options.history.timeout = absl::Seconds(3);
  LiveFeedClient client(options, &coalescer);
  client.Start();
  ViewerState state;

  // History: the list and the top item's snapshots.
  ASSERT_TRUE(ApplyUntil(&coalescer, &state, [&] { return state.loss.has_data(); }));
  EXPECT_EQ(state.loss.chosen_item(), 151u);
  EXPECT_FALSE(state.loss.NeedsSnapshots());
  EXPECT_EQ(state.loss.ChosenSnapshots().size(), 5u);

  // "<job>/maps": a new snapshot of the shown item appends to its iterations
  // (published until the subscription has joined).
  trainscope::v1::ItemSnapshot live = top.snapshots(top.snapshots_size() - 1);
  uint64_t iteration = 1000;
  ASSERT_TRUE(ApplyUntil(
      &coalescer, &state, [&] { return state.loss.ChosenSnapshots().back().iteration >= 1000; },
      [&] {
        live.set_iteration(++iteration);
        trainscope::v1::FeedUpdate update;
        *update.mutable_item_snapshot() = live;
        collector.Publish("maps", update);
      }));
  EXPECT_GE(state.loss.CurrentFrame()->count, 6u);
  EXPECT_TRUE(state.loss.following_newest());

  // "<job>/loss": the list is replaced.
  trainscope::v1::LossState smaller = top.state();
  smaller.mutable_items()->DeleteSubrange(3, smaller.items_size() - 3);
  ASSERT_TRUE(ApplyUntil(
      &coalescer, &state, [&] { return state.loss.state()->items.size() == 3; },
      [&] {
        trainscope::v1::FeedUpdate update;
        *update.mutable_loss() = smaller;
        collector.Publish("loss", update);
      }));

  // A click on another item: its snapshots come from the snapshot server.
  const uint64_t other = smaller.items(2).item();
  state.loss.Choose(other);
  ASSERT_TRUE(state.loss.NeedsSnapshots());
  client.RequestItem(other);
  ASSERT_TRUE(ApplyUntil(&coalescer, &state, [&] { return !state.loss.NeedsSnapshots(); }));
  EXPECT_TRUE(collector.items_asked().count(other));
  EXPECT_EQ(state.loss.ChosenSnapshots().size(), fixture.Answer(other).snapshots_size());
  client.Stop();
}

}  // namespace
}  // namespace trainscope::viewer
