// Where job pipelines hand their live-feed updates.
//
// The ZeroMQ publisher implements it in the adapters; tests use a recording
// fake. Pipelines assign contiguous per-job sequence numbers before calling
// Publish; a sink that cannot keep up drops updates (subscribers then see a
// gap and ask for a snapshot) rather than slowing ingest.
//
// Subscriptions: Wants(topic) says whether an update of that topic could
// reach anyone now, so that producers can skip building costly updates (a
// step's aligned operators) nobody receives. A sink that cannot tell says
// true, the default.
//
// Threading: Publish and Wants are thread-safe and must never block.
#ifndef TRAINSCOPE_COLLECTOR_PUBLISH_FEED_SINK_H_
#define TRAINSCOPE_COLLECTOR_PUBLISH_FEED_SINK_H_

#include <string>

#include "absl/strings/string_view.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::collector {

class FeedSink {
 public:
  virtual ~FeedSink() = default;
  virtual void Publish(trainscope::v1::FeedUpdate update) = 0;
  virtual bool Wants(absl::string_view topic) const { return true; }
};

// FeedTopic's topic for `kind` ("job", "rank", "command", "step", "clock",
// "ops") of job `job_id`.
std::string FeedTopicOf(absl::string_view job_id, absl::string_view kind);

// "<job_id>/<kind>" with kind "job", "rank" or "command" (see feed.proto).
std::string FeedTopic(const trainscope::v1::FeedUpdate& update);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PUBLISH_FEED_SINK_H_
