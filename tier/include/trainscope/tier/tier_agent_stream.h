// An agent stream whose agent is a rank on another host, replayed from
// JetStream: the job-level collector drives an ordinary AgentSession over it,
// so that the rank's records go through the same validation, durable log,
// analysis and commands as a rank connected directly.
//
// Usage (by UpstreamConsumer):
//   auto stream = std::make_shared<TierAgentStream>(id, &events);
//   auto session = AgentSession::Create(registry, stream, &budget, counters, "nats:node-a");
//   session->Start();   // -> events.OnReadRequested(id)
//
// What the collector says to the rank (HelloAck, Ack, Reject, commands) and
// its requests for the next message go to `events`, which the consumer's
// delivery thread serves: the core never gets a synchronous call back.
//
// Threading: thread-safe and non-blocking (AgentStream's contract); `events`
// must outlive every stream.
#ifndef TRAINSCOPE_TIER_TIER_AGENT_STREAM_H_
#define TRAINSCOPE_TIER_TIER_AGENT_STREAM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "trainscope/collector/ingest/agent_stream.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::tier {

class TierStreamEvents {
 public:
  virtual ~TierStreamEvents() = default;
  virtual void OnControl(uint64_t stream_id, trainscope::v1::Control control) = 0;
  virtual void OnReadRequested(uint64_t stream_id) = 0;
  virtual void OnFinish(uint64_t stream_id, absl::Status status) = 0;
};

class TierAgentStream : public collector::AgentStream {
 public:
  TierAgentStream(uint64_t id, TierStreamEvents* events) : id_(id), events_(events) {}

  void Send(trainscope::v1::Control control) override {
    events_->OnControl(id_, std::move(control));
  }
  void RequestRead() override { events_->OnReadRequested(id_); }
  void Finish(absl::Status status) override { events_->OnFinish(id_, std::move(status)); }

  uint64_t id() const { return id_; }

 private:
  const uint64_t id_;
  TierStreamEvents* const events_;
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_TIER_AGENT_STREAM_H_
