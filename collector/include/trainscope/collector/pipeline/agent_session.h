// The collector's side of one agent stream, independent of the transport.
//
// Usage (by a transport adapter, e.g. the gRPC reactor):
//   auto session = AgentSession::Create(&registry, stream, &budget, &counters, peer);
//   session->Start();                      // asks the stream for the first message
//   session->OnMessage(std::move(msg));    // each message the stream delivers
//   session->OnReadsDone("...");           // the agent stopped sending
//   session->OnStreamDone("...");          // the transport is gone
//
// State machine: AwaitingHello [-> AwaitingProof] -> Attaching -> Active -> Closed.
//  - Hello: validated, membership proven (below), then attached to the job's
//    pipeline, which answers with the HelloAck (resume point, token,
//    recording state).
//  - Membership (docs/security.md): a protocol-2 Hello carries no secret; the
//    session answers it with a MembershipChallenge (a fresh nonce when it
//    has a job key) and waits for the MembershipProof, verified before the
//    job is looked up or created. A protocol-1 Hello presents the secret
//    itself (Hello.job_token). Without a job key the token goes on to the
//    job's JobTokenKeeper (trust on first use). A refusal is counted in the
//    job's status (JobRegistry::CountRefusedHello), not only sent to the
//    refused process.
//  - Batches: sequence must be last + 1. A repeat is rejected (the stream goes
//    on); a gap ends the stream with FAILED_PRECONDITION (the agent reconnects
//    and resends from its resume point); an invalid batch is logged as a
//    refusal marker and rejected with the validator's reason (its sequence is
//    consumed). Valid batches go to the pipeline; each is acknowledged once
//    durable, in order.
//  - Flow control: at most max_in_flight batches await durability per stream,
//    and beyond the first one a stream also waits while the global budget is
//    exhausted; the next read is only requested below those bounds.
//  - Goodbye: logged as a clean close; the stream ends once the agent stops
//    sending and every ack is out.
// Every bad input is counted and reported to the agent naming the field.
//
// Threading: thread-safe. The adapter's reads and the pipeline's completions
// arrive on different threads; one mutex per session serialises them
// (uncontended in practice: a stream has one reader).
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_AGENT_SESSION_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_AGENT_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/bad_input_counters.h"
#include "trainscope/collector/ingest/agent_stream.h"
#include "trainscope/collector/ingest/batch_validator.h"
#include "trainscope/collector/ingest/ingest_budget.h"
#include "trainscope/collector/ingest/memory_limiter.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/security/job_key.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

struct AgentSessionOptions {
  uint32_t max_in_flight = 8;  // batches received but not yet durable
  BatchLimits batch_limits;
  // When set, a Hello must prove its job's secret derived from this key
  // (docs/security.md): checked before the job is looked up or created, so a
  // process without it neither squats a job id nor claims a rank slot.
  std::shared_ptr<const security::JobKey> job_key;
  // When set, batches are refused while the process is over its memory
  // limit (MemoryLimiter; --memory-limit-mib).
  std::shared_ptr<MemoryLimiter> memory_limiter;
};

class AgentSession : public std::enable_shared_from_this<AgentSession> {
 public:
  enum class State { kAwaitingHello, kAwaitingProof, kAttaching, kActive, kClosed };

  static std::shared_ptr<AgentSession> Create(JobRegistry* registry,
                                              std::shared_ptr<AgentStream> stream,
                                              IngestBudget* budget, BadInputCounters* counters,
                                              std::string peer, AgentSessionOptions options = {});

  void Start();
  void OnMessage(trainscope::v1::AgentMessage message);
  // The agent finished sending (or the read failed): end once acks are out.
  void OnReadsDone(absl::string_view reason);
  // The transport is gone; nothing can be sent any more.
  void OnStreamDone(absl::string_view reason);

  State state() const;
  uint64_t last_sequence() const;  // last batch sequence consumed

 private:
  AgentSession(JobRegistry* registry, std::shared_ptr<AgentStream> stream, IngestBudget* budget,
               BadInputCounters* counters, std::string peer, AgentSessionOptions options);

  void OnHello(trainscope::v1::Hello& hello) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnProof(const trainscope::v1::MembershipProof& proof) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Membership is proven (or left to the job's token keeper): attach.
  void Join(trainscope::v1::Hello hello) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Refuses the stream with PERMISSION_DENIED (`what` the rank did wrong)
  // and counts the attempt in the job's status.
  void RefuseMembership(absl::string_view field, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnAttached(absl::StatusOr<AttachResult> result);
  void OnBatch(trainscope::v1::EventBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnBatchDurable(uint64_t sequence, uint64_t bytes, const std::string& refused_reason,
                      absl::Status status);
  // Counts `status` as bad input (when `count`) and ends the stream with it.
  void RefuseStream(const absl::Status& status, bool count = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the stream with `status` as soon as no batch is in flight.
  void FinishWhenDrained(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DetachFromPipeline(std::optional<trainscope::v1::Goodbye> goodbye, std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeRequestRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Who() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  JobRegistry* const registry_;
  const std::shared_ptr<AgentStream> stream_;
  IngestBudget* const budget_;
  BadInputCounters* const counters_;
  const std::string peer_;
  const AgentSessionOptions options_;

  mutable base::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kAwaitingHello;
  std::string job_id_ ABSL_GUARDED_BY(mu_);
  uint32_t rank_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t instance_ ABSL_GUARDED_BY(mu_) = 0;
  std::string host_ ABSL_GUARDED_BY(mu_);
  uint32_t pid_ ABSL_GUARDED_BY(mu_) = 0;
  JobPipeline* pipeline_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t connection_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<BatchValidator> validator_ ABSL_GUARDED_BY(mu_);
  // While AwaitingProof: the Hello and the challenge's nonce.
  trainscope::v1::Hello pending_hello_ ABSL_GUARDED_BY(mu_);
  std::string nonce_ ABSL_GUARDED_BY(mu_);
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool read_outstanding_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool said_goodbye_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // an ack could not be given: no later ones
  std::optional<absl::Status> finish_ ABSL_GUARDED_BY(mu_);  // pending end of stream
  std::string close_reason_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_AGENT_SESSION_H_
