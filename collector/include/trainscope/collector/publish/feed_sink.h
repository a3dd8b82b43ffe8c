// Where job pipelines hand their live-feed updates.
//
// The ZeroMQ publisher implements it in the adapters; tests use a recording
// fake. Pipelines assign contiguous per-job sequence numbers before calling
// Publish; a sink that cannot keep up drops updates (subscribers then see a
// gap and ask for a snapshot) rather than slowing ingest.
//
// Threading: Publish is thread-safe and must never block.
#ifndef TRAINSCOPE_COLLECTOR_PUBLISH_FEED_SINK_H_
#define TRAINSCOPE_COLLECTOR_PUBLISH_FEED_SINK_H_

#include "trainscope/v1/feed.pb.h"

namespace trainscope::collector {

class FeedSink {
 public:
  virtual ~FeedSink() = default;
  virtual void Publish(trainscope::v1::FeedUpdate update) = 0;
};

// "<job_id>/<kind>" with kind "job", "rank" or "command" (see feed.proto).
std::string FeedTopic(const trainscope::v1::FeedUpdate& update);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PUBLISH_FEED_SINK_H_
