#include "trainscope/collector/pipeline/analysis_feed.h"

#include <utility>

namespace trainscope::collector {

AnalysisFeed::AnalysisFeed(std::string job_id, FeedSink* feed, Hooks hooks)
    : job_id_(std::move(job_id)), feed_(feed), hooks_(std::move(hooks)) {}

JobAnalyzerOutputs AnalysisFeed::Outputs() {
  JobAnalyzerOutputs outputs;
  // Outputs arrive on the analysis thread; the pipeline thread owns the feed
  // sequence, the alerts and the index, so they are posted there.
  outputs.on_step = [this](v1::StepReport step, v1::OperatorBatch operators) {
    hooks_.post([this, step = std::move(step), operators = std::move(operators)]() mutable {
      OnStep(std::move(step), std::move(operators));
    });
  };
  if (feed_ != nullptr) {
    // Asked on the analysis thread; FeedSink::Wants is thread-safe.
    outputs.operators_wanted = [feed = feed_, topic = FeedTopicOf(job_id_, "ops")] {
      return feed->Wants(topic);
    };
  }
  outputs.on_loss = [this](LossOutput loss) {
    hooks_.post([this, loss = std::move(loss)]() mutable { OnLoss(std::move(loss)); });
  };
  outputs.on_clocks = [this](v1::ClockReport clocks) {
    hooks_.post([this, clocks = std::move(clocks)]() mutable { OnClocks(std::move(clocks)); });
  };
  return outputs;
}

void AnalysisFeed::OnStep(v1::StepReport step, v1::OperatorBatch operators) {
  if (!operators.operators().empty()) {
    v1::FeedUpdate update;
    *update.mutable_operators() = std::move(operators);
    hooks_.queue(std::move(update));
  }
  hooks_.step_closed(step);
  v1::FeedUpdate update;
  *update.mutable_step() = std::move(step);
  hooks_.queue(std::move(update));
}

void AnalysisFeed::OnLoss(LossOutput loss) {
  if (loss.state.has_value()) {
    v1::FeedUpdate update;
    *update.mutable_loss() = std::move(*loss.state);
    hooks_.queue(std::move(update));
  }
  for (v1::ItemSnapshot& snapshot : loss.snapshots) {
    v1::FeedUpdate update;
    *update.mutable_item_snapshot() = std::move(snapshot);
    hooks_.queue(std::move(update));
  }
  for (const LossTracker::ClosedEpoch& epoch : loss.closed) hooks_.loss_epoch_closed(epoch);
}

void AnalysisFeed::OnClocks(v1::ClockReport clocks) {
  v1::FeedUpdate update;
  *update.mutable_clocks() = std::move(clocks);
  hooks_.queue(std::move(update));
}

}  // namespace trainscope::collector
