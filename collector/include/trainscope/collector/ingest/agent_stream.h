// The transport side of one agent stream, as the core sees it.
//
// The gRPC adapter implements it over a ServerBidiReactor; unit tests use a
// fake. The core (AgentSession, JobPipeline) never sees a gRPC type.
//
// Threading: every method is thread-safe and non-blocking, and may be called
// after the stream is gone (it then does nothing). No method calls back into
// the core synchronously.
#ifndef TRAINSCOPE_COLLECTOR_INGEST_AGENT_STREAM_H_
#define TRAINSCOPE_COLLECTOR_INGEST_AGENT_STREAM_H_

#include "absl/status/status.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

class AgentStream {
 public:
  virtual ~AgentStream() = default;

  // Queues `control` for the agent; messages leave in the order given.
  virtual void Send(trainscope::v1::Control control) = 0;
  // Asks for the next message from the agent (at most one request outstanding);
  // it arrives through AgentSession::OnMessage or the stream ends.
  virtual void RequestRead() = 0;
  // Ends the stream with `status` once the queued messages are written.
  // Only the first call counts.
  virtual void Finish(absl::Status status) = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_AGENT_STREAM_H_
