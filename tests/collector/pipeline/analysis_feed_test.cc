#include "trainscope/collector/pipeline/analysis_feed.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "testing/event_batch_builder.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using testing::EventBatchBuilder;
using testing::MakeHello;

// What the pipeline would see, as one list of events in the order they came:
// "ops:<step>", "step:<step>", "closed:<step>", "loss", "item:<id>",
// "epoch:<n>", "clocks", "alert" (queued by the step_closed hook).
class AnalysisFeedTest : public ::testing::Test {
 protected:
  AnalysisFeed::Hooks Hooks() {
    return {.post = [this](std::function<void()> task) { posted_.push_back(std::move(task)); },
            .queue = [this](v1::FeedUpdate update) { Queued(std::move(update)); },
            .step_closed =
                [this](const v1::StepReport& step) {
                  seen_.push_back(absl::StrCat("closed:", step.step()));
                  // What the pipeline does here: an alert goes on the feed.
                  v1::FeedUpdate alert;
                  alert.mutable_alert()->set_rule("straggler");
                  Queued(std::move(alert));
                },
            .loss_epoch_closed =
                [this](const LossTracker::ClosedEpoch& epoch) {
                  seen_.push_back(absl::StrCat("epoch:", epoch.epoch));
                }};
  }

  void Queued(v1::FeedUpdate update) {
    switch (update.body_case()) {
      case v1::FeedUpdate::kOperators:
        seen_.push_back(absl::StrCat("ops:", update.operators().operators(0).step()));
        break;
      case v1::FeedUpdate::kStep:
        seen_.push_back(absl::StrCat("step:", update.step().step()));
        break;
      case v1::FeedUpdate::kLoss:
        seen_.push_back("loss");
        break;
      case v1::FeedUpdate::kItemSnapshot:
        seen_.push_back(absl::StrCat("item:", update.item_snapshot().item()));
        break;
      case v1::FeedUpdate::kClocks:
        seen_.push_back("clocks");
        break;
      case v1::FeedUpdate::kAlert:
        seen_.push_back("alert");
        break;
      default:
        seen_.push_back(absl::StrCat("other:", update.body_case()));
    }
    updates_.push_back(std::move(update));
  }

  // Runs what the outputs posted, as the pipeline thread would.
  void RunPosted() {
    std::vector<std::function<void()>> tasks;
    tasks.swap(posted_);
    for (auto& task : tasks) task();
  }

  static v1::OperatorBatch Operators(uint64_t step, int count) {
    v1::OperatorBatch batch;
    for (int i = 0; i < count; ++i) batch.add_operators()->set_step(step);
    return batch;
  }
  static v1::StepReport Step(uint64_t step) {
    v1::StepReport report;
    report.set_step(step);
    return report;
  }

  std::vector<std::function<void()>> posted_;
  std::vector<std::string> seen_;
  std::vector<v1::FeedUpdate> updates_;
};

TEST_F(AnalysisFeedTest, AStepsOperatorsComeFirstThenWhatTheStepSetsOffThenTheStep) {
  AnalysisFeed feed("j", nullptr, Hooks());
  feed.OnStep(Step(4), Operators(4, 3));
  EXPECT_THAT(seen_, ElementsAre("ops:4", "closed:4", "alert", "step:4"));
  EXPECT_EQ(updates_[0].operators().operators_size(), 3);
  // The updates carry neither job id nor sequence: the pipeline numbers them.
  for (const v1::FeedUpdate& update : updates_) {
    EXPECT_EQ(update.job_id(), "");
    EXPECT_EQ(update.sequence(), 0u);
  }
}

TEST_F(AnalysisFeedTest, AStepWithoutOperatorsQueuesNoOperatorUpdate) {
  AnalysisFeed feed("j", nullptr, Hooks());
  feed.OnStep(Step(7), v1::OperatorBatch());
  EXPECT_THAT(seen_, ElementsAre("closed:7", "alert", "step:7"));
}

TEST_F(AnalysisFeedTest, ALossReportQueuesItsStateThenItsSnapshotsThenClosesItsEpochs) {
  AnalysisFeed feed("j", nullptr, Hooks());
  LossOutput loss;
  loss.state.emplace();
  loss.snapshots.emplace_back().set_item(21);
  loss.snapshots.emplace_back().set_item(22);
  loss.closed.emplace_back().epoch = 3;
  loss.closed.emplace_back().epoch = 4;
  feed.OnLoss(std::move(loss));
  EXPECT_THAT(seen_, ElementsAre("loss", "item:21", "item:22", "epoch:3", "epoch:4"));

  // A report that did not change the job-wide list sends no loss state.
  seen_.clear();
  LossOutput snapshots_only;
  snapshots_only.snapshots.emplace_back().set_item(23);
  feed.OnLoss(std::move(snapshots_only));
  EXPECT_THAT(seen_, ElementsAre("item:23"));
}

TEST_F(AnalysisFeedTest, OutputsReachTheFeedOnlyThroughPostInTheOrderTheyCame) {
  AnalysisFeed feed("j", nullptr, Hooks());
  JobAnalyzerOutputs outputs = feed.Outputs();
  outputs.on_clocks(v1::ClockReport());
  outputs.on_step(Step(1), Operators(1, 2));
  LossOutput loss;
  loss.state.emplace();
  outputs.on_loss(std::move(loss));
  // Nothing happened on the analysis thread but the posts.
  EXPECT_TRUE(seen_.empty());
  ASSERT_EQ(posted_.size(), 3u);
  RunPosted();
  EXPECT_THAT(seen_, ElementsAre("clocks", "ops:1", "closed:1", "alert", "step:1", "loss"));
}

// Subscribes to the topics it is told to, and nothing else.
class SubscribedFeed : public FeedSink {
 public:
  void Publish(v1::FeedUpdate) override {}
  bool Wants(absl::string_view topic) const override { return topic == wanted; }
  std::string wanted;
};

TEST_F(AnalysisFeedTest, OperatorsAreWantedOnlyWhileTheJobsOpsTopicHasASubscriber) {
  SubscribedFeed sink;
  AnalysisFeed feed("job-9", &sink, Hooks());
  JobAnalyzerOutputs outputs = feed.Outputs();
  ASSERT_TRUE(outputs.operators_wanted);
  EXPECT_FALSE(outputs.operators_wanted());
  sink.wanted = FeedTopicOf("job-9", "ops");
  EXPECT_TRUE(outputs.operators_wanted());
  sink.wanted = FeedTopicOf("other-job", "ops");
  EXPECT_FALSE(outputs.operators_wanted());
  // Without a live feed nobody can tell: the analyzer always builds them.
  EXPECT_FALSE(AnalysisFeed("job-9", nullptr, Hooks()).Outputs().operators_wanted);
}

TEST_F(AnalysisFeedTest, AJobAnalyzersStepsAndClocksBecomeFeedUpdatesInOrder) {
  AnalysisFeed feed("j", nullptr, Hooks());
  JobAnalyzer analyzer({}, feed.Outputs());
  const int64_t now = 1'700'000'000'000'000'000;
  for (uint32_t rank : {0u, 1u}) {
    v1::LogRecord record;
    record.set_logged_unix_ns(now);
    *record.mutable_stream_opened()->mutable_hello() = MakeHello("j", rank, 2, 11 + rank);
    analyzer.OnLogRecord(record);
  }
  // Three steps on both ranks: an operator, an all-reduce, the next step's
  // mark; steps 0 and 1 close (step 2 waits for its end marks).
  for (uint64_t step = 0; step < 3; ++step) {
    for (uint32_t rank : {0u, 1u}) {
      const int64_t t0 = static_cast<int64_t>(step) * 10'000'000 + 1'000'000'000;
      EventBatchBuilder b(step + 1);
      b.Operator("aten::mm", t0, t0 + 4'000'000);
      b.Collective("gloo:all_reduce", t0 + 4'000'000, t0 + 8'000'000,
                   v1::COLLECTIVE_KIND_ALL_REDUCE, "", step + 1, 1024);
      b.StepMark(t0 + 10'000'000, step + 1);
      v1::LogRecord record;
      record.set_logged_unix_ns(now);
      record.mutable_batch()->set_rank(rank);
      record.mutable_batch()->set_agent_instance_id(11 + rank);
      *record.mutable_batch()->mutable_batch() = b.Build();
      analyzer.OnLogRecord(record);
    }
  }
  analyzer.Tick(now + 1'000'000'000);
  RunPosted();
  std::vector<std::string> steps_and_ops;
  for (const std::string& s : seen_) {
    if (s != "clocks") steps_and_ops.push_back(s);
  }
  EXPECT_THAT(steps_and_ops, ElementsAre("ops:0", "closed:0", "alert", "step:0",  //
                                         "ops:1", "closed:1", "alert", "step:1"));
  EXPECT_NE(std::find(seen_.begin(), seen_.end(), "clocks"), seen_.end());
  for (const v1::FeedUpdate& update : updates_) {
    if (update.has_step()) {
      EXPECT_EQ(update.step().devices_size(), 2);
    }
    if (update.has_operators()) {
      EXPECT_EQ(update.operators().operators_size(), 2 * 2);  // 2 ranks x 2 operators
    }
  }
}

}  // namespace
}  // namespace trainscope::collector
