// The gRPC adapter for agent streams: AgentService.Connect, one
// ServerBidiReactor per stream wrapping a transport-neutral AgentSession.
//
// Usage:
//   GrpcAgentService service(&registry, &budget, &counters, session_options);
//   builder.RegisterService(&service);
//
// The reactor keeps one write outstanding (queued Controls go out in order),
// issues a read only when its session asks for one (the session's flow
// control), and finishes once queued writes are out. The AgentStream the core
// holds reaches the reactor through a pointer that OnDone clears, so pipeline
// callbacks arriving after the stream died touch nothing freed.
//
// Threading: gRPC calls the reactors on its callback threads; everything
// shared is behind the session's and the stream link's mutexes.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_GRPC_AGENT_SERVICE_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_GRPC_AGENT_SERVICE_H_

#include <atomic>
#include <cstdint>

#include "trainscope/collector/bad_input_counters.h"
#include "trainscope/collector/pipeline/agent_session.h"
#include "trainscope/collector/ingest/ingest_budget.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::collector {

class GrpcAgentService final : public trainscope::v1::AgentService::CallbackService {
 public:
  GrpcAgentService(JobRegistry* registry, IngestBudget* budget, BadInputCounters* counters,
                   AgentSessionOptions session_options = {});

  grpc::ServerBidiReactor<trainscope::v1::AgentMessage, trainscope::v1::Control>* Connect(
      grpc::CallbackServerContext* context) override;

  int64_t open_streams() const { return open_streams_.load(std::memory_order_relaxed); }
  uint64_t streams_served() const { return streams_served_.load(std::memory_order_relaxed); }

 private:
  friend class AgentStreamReactor;

  JobRegistry* const registry_;
  IngestBudget* const budget_;
  BadInputCounters* const counters_;
  const AgentSessionOptions session_options_;
  std::atomic<int64_t> open_streams_{0};
  std::atomic<uint64_t> streams_served_{0};
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_GRPC_AGENT_SERVICE_H_
