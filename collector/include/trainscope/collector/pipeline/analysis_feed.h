// Carries a job's analysis outputs from the analysis thread to the job's
// pipeline thread and turns them there into feed updates, in the order the
// feed gets them:
//  - a closed step: its aligned operators, then whatever the step sets off
//    in the pipeline (its index row, the alerts it raises, a halt by
//    policy: the step_closed hook), then the step itself, so that a viewer
//    holds a step's operators and alerts once the step arrives;
//  - a loss report: the job-wide loss state, then the items' snapshots in
//    the order they came, then each loss epoch it closed (loss_epoch_closed:
//    the difficult_item rule's alerts);
//  - a clock report as it comes.
// Operators are built only while someone subscribes to the job's "ops"
// topic (FeedSink::Wants), since they cost a proto per operator.
//
// Usage (the pipeline):
//   AnalysisFeed feed(job_id, options.feed,
//                     {.post = [this](std::function<void()> task) { ...run on my thread... },
//                      .queue = [this](v1::FeedUpdate u) { QueueFeed(std::move(u)); },
//                      .step_closed = [this](const v1::StepReport& s) { ...index, alerts... },
//                      .loss_epoch_closed = [this](const LossTracker::ClosedEpoch& e) {...}});
//   auto worker = std::make_unique<AnalysisWorker>(worker_options, analyzer_options,
//                                                  feed.Outputs());
//
// The updates it queues carry neither job id nor sequence: the pipeline
// numbers them with the rest of the job's feed after its group commit.
//
// Threading: the outputs Outputs() returns run on the analysis thread and do
// nothing there but hand the output to `post` (and ask the FeedSink, which is
// thread-safe, whether operators are wanted). OnStep, OnLoss and OnClocks,
// and so every hook but `post`, run on the job's pipeline thread, which owns
// this object. It holds no mutable state, so it needs no lock.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_ANALYSIS_FEED_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_ANALYSIS_FEED_H_

#include <functional>
#include <string>

#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/collector/publish/feed_sink.h"
#include "trainscope/v1/analysis.pb.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::collector {

class AnalysisFeed {
 public:
  struct Hooks {
    // Runs `task` on the pipeline thread (dropping it once the pipeline has
    // stopped). Called on the analysis thread.
    std::function<void(std::function<void()> task)> post;
    // The next feed update, in publication order.
    std::function<void(trainscope::v1::FeedUpdate update)> queue;
    // A step closed: runs after its operators were queued, before the step.
    std::function<void(const trainscope::v1::StepReport& step)> step_closed;
    // A loss epoch closed: runs after the report's loss updates were queued.
    std::function<void(const LossTracker::ClosedEpoch& epoch)> loss_epoch_closed;
  };

  // `feed` (may be null: no live feed, operators always built) must outlive
  // the analysis the outputs are given to.
  AnalysisFeed(std::string job_id, FeedSink* feed, Hooks hooks);

  // The outputs to give the job's JobAnalyzer (through its AnalysisWorker).
  // They refer to this object: it must outlive the analysis' last output
  // (stop the worker first).
  JobAnalyzerOutputs Outputs();

  // Pipeline thread: an output, turned into feed updates (see above).
  void OnStep(trainscope::v1::StepReport step, trainscope::v1::OperatorBatch operators);
  void OnLoss(LossOutput loss);
  void OnClocks(trainscope::v1::ClockReport clocks);

 private:
  const std::string job_id_;
  FeedSink* const feed_;
  const Hooks hooks_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_ANALYSIS_FEED_H_
