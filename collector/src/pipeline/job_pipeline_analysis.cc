// JobPipeline: the live analysis's inputs and outputs (see job_pipeline.h).
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {

// Records go to the analysis only after the group commit made them durable.
void JobPipeline::Analyse(v1::LogRecord record) {
  if (analysis_) pending_analysis_.push_back(std::move(record));
}

void JobPipeline::StartAnalysis() {
  if (!options_.analysis) return;
  AnalysisWorkerOptions worker_options;
  worker_options.max_queued_events = options_.max_analysis_queue_events;
  worker_options.notice = [this](absl::string_view line) { Notice(line); };
  JobAnalyzerOutputs outputs;
  // Outputs arrive on the analysis thread; the pipeline thread owns the feed
  // sequence and the index, so they are posted there.
  outputs.on_step = [this](v1::StepReport step, v1::OperatorBatch operators) {
    Post([this, step = std::move(step), operators = std::move(operators)](bool run) mutable {
      if (run) OnStepAnalysed(std::move(step), std::move(operators));
    });
  };
  if (options_.feed != nullptr) {
    // Asked on the analysis thread; FeedSink::Wants is thread-safe.
    outputs.operators_wanted = [feed = options_.feed, topic = FeedTopicOf(job_id_, "ops")] {
      return feed->Wants(topic);
    };
  }
  outputs.on_loss = [this](LossOutput loss) {
    Post([this, loss = std::move(loss)](bool run) mutable {
      if (run) OnLossAnalysed(std::move(loss));
    });
  };
  outputs.on_clocks = [this](v1::ClockReport clocks) {
    v1::FeedUpdate update;
    *update.mutable_clocks() = std::move(clocks);
    Post([this, update = std::move(update)](bool run) mutable {
      if (run) QueueFeed(std::move(update));
    });
  };
  analysis_ = std::make_unique<AnalysisWorker>(std::move(worker_options), options_.analyzer,
                                               std::move(outputs));
}

void JobPipeline::OnStepAnalysed(v1::StepReport step, v1::OperatorBatch operators) {
  if (!operators.operators().empty()) {
    v1::FeedUpdate update;
    *update.mutable_operators() = std::move(operators);
    QueueFeed(std::move(update));
  }
  if (index_) pending_index_steps_.push_back(step);
  EvaluateAlerts(step);
  v1::FeedUpdate update;
  *update.mutable_step() = std::move(step);
  QueueFeed(std::move(update));
}

void JobPipeline::OnLossAnalysed(LossOutput loss) {
  if (loss.state.has_value()) {
    v1::FeedUpdate update;
    *update.mutable_loss() = std::move(*loss.state);
    QueueFeed(std::move(update));
  }
  for (v1::ItemSnapshot& snapshot : loss.snapshots) {
    v1::FeedUpdate update;
    *update.mutable_item_snapshot() = std::move(snapshot);
    QueueFeed(std::move(update));
  }
  for (const LossTracker::ClosedEpoch& epoch : loss.closed) EvaluateLossEpoch(epoch);
}

void JobPipeline::Query(v1::SnapshotRequest request, std::function<void(v1::FeedSnapshot)> done) {
  if (!analysis_) {
    v1::FeedSnapshot reply;
    reply.set_error(
        absl::StrCat("job ", job_id_, ": the collector runs without analysis (--analysis=false)"));
    return done(std::move(reply));
  }
  analysis_->Query(std::move(request), std::move(done));
}

}  // namespace trainscope::collector
