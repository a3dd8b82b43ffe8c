#include "trainscope/collector/pipeline/agent_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/ingest/hello_validator.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/security/membership_proof.h"

namespace trainscope::collector {

std::shared_ptr<AgentSession> AgentSession::Create(JobRegistry* registry,
                                                   std::shared_ptr<AgentStream> stream,
                                                   IngestBudget* budget, BadInputCounters* counters,
                                                   std::string peer, AgentSessionOptions options) {
  return std::shared_ptr<AgentSession>(
      new AgentSession(registry, std::move(stream), budget, counters, std::move(peer), options));
}

AgentSession::AgentSession(JobRegistry* registry, std::shared_ptr<AgentStream> stream,
                           IngestBudget* budget, BadInputCounters* counters, std::string peer,
                           AgentSessionOptions options)
    : registry_(registry),
      stream_(std::move(stream)),
      budget_(budget),
      counters_(counters),
      peer_(std::move(peer)),
      options_(options) {}

AgentSession::State AgentSession::state() const {
  base::MutexLock lock(&mu_);
  return state_;
}

uint64_t AgentSession::last_sequence() const {
  base::MutexLock lock(&mu_);
  return last_sequence_;
}

std::string AgentSession::Who() const {
  if (job_id_.empty()) return absl::StrCat("peer ", peer_);
  return absl::StrCat("job ", job_id_, " rank ", rank_, " (host '", host_, "', pid ", pid_,
                      ", peer ", peer_, ")");
}

void AgentSession::Start() {
  base::MutexLock lock(&mu_);
  MaybeRequestRead();
}

void AgentSession::MaybeRequestRead() {
  if (read_outstanding_ || reads_done_ || finish_ || finished_) return;
  switch (state_) {
    case State::kAwaitingHello:
    case State::kAwaitingProof:
      break;
    case State::kAttaching:
    case State::kClosed:
      return;
    case State::kActive:
      if (in_flight_ >= options_.max_in_flight) return;
      // Over the global budget a stream keeps one batch moving, no more.
      if (in_flight_ > 0 && budget_ != nullptr && budget_->exhausted()) return;
      break;
  }
  read_outstanding_ = true;
  stream_->RequestRead();
}

void AgentSession::OnMessage(v1::AgentMessage message) {
  base::MutexLock lock(&mu_);
  read_outstanding_ = false;
  if (finish_ || finished_) return;  // the stream is ending; ignore what is still arriving
  auto out_of_order = [this](absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RefuseStream(
        BadInput(absl::StatusCode::kFailedPrecondition, "message.order",
                 absl::StrCat("expected hello as the first message on the stream, got ", what)));
  };
  switch (message.body_case()) {
    case v1::AgentMessage::kHello:
      if (state_ != State::kAwaitingHello) {
        RefuseStream(BadInput(absl::StatusCode::kFailedPrecondition, "message.order",
                              "hello: already received on this stream; send it once, first"));
      } else {
        OnHello(*message.mutable_hello());
      }
      break;
    case v1::AgentMessage::kMembershipProof:
      if (state_ != State::kAwaitingProof) {
        RefuseStream(BadInput(absl::StatusCode::kFailedPrecondition, "message.order",
                              "membership_proof: not challenged; send it once, in answer to "
                              "the collector's membership_challenge"));
      } else {
        OnProof(message.membership_proof());
      }
      break;
    case v1::AgentMessage::kBatch:
      if (state_ != State::kActive) {
        out_of_order(absl::StrCat("batch ", message.batch().sequence()));
      } else {
        OnBatch(*message.mutable_batch());
      }
      break;
    case v1::AgentMessage::kProbeReply:
      if (state_ != State::kActive) {
        out_of_order("probe_reply");
      } else if (!said_goodbye_) {
        pipeline_->RecordProbeReply(connection_id_, std::move(*message.mutable_probe_reply()),
                                    absl::ToUnixNanos(absl::Now()));
      }
      break;
    case v1::AgentMessage::kGoodbye:
      if (state_ != State::kActive) {
        out_of_order("goodbye");
      } else if (!said_goodbye_) {
        said_goodbye_ = true;
        DetachFromPipeline(std::move(*message.mutable_goodbye()), "goodbye");
      }
      break;
    case v1::AgentMessage::BODY_NOT_SET:
      RefuseStream(BadInput(absl::StatusCode::kInvalidArgument, "message.body",
                            "message has no body; expected one of hello, membership_proof, "
                            "batch, probe_reply, goodbye (is the agent newer than this "
                            "collector?)"));
      break;
  }
  MaybeRequestRead();
}

void AgentSession::OnHello(v1::Hello& hello) {
  if (absl::Status s = ValidateHello(hello); !s.ok()) return RefuseStream(s);
  job_id_ = hello.job_id();
  rank_ = hello.rank();
  instance_ = hello.agent_instance_id();
  host_ = hello.host();
  pid_ = hello.pid();
  if (std::min(hello.protocol_version(), kProtocolVersion) < kMembershipChallengeVersion) {
    // Protocol 1: the secret came in the Hello (an agent from before the
    // challenge; docs/security.md "Agents of protocol 1").
    if (options_.job_key != nullptr && !options_.job_key->Proves(job_id_, hello.job_token())) {
      return RefuseMembership("hello.job_token", hello.job_token().empty()
                                                     ? "presented no job secret"
                                                     : "presented a token that is not the "
                                                       "job's secret");
    }
    return Join(std::move(hello));
  }
  if (!hello.job_token().empty()) {
    // Whoever sent it speaks the challenge yet put a secret on the wire.
    return RefuseStream(
        BadInput(absl::StatusCode::kInvalidArgument, "hello.job_token",
                 absl::StrCat("job ", job_id_, ": rank ", rank_, ": a protocol ",
                              kMembershipChallengeVersion,
                              " Hello must not carry a token; expected it empty and the "
                              "membership_challenge answered with a membership_proof")));
  }
  if (options_.job_key != nullptr) {
    absl::StatusOr<std::string> nonce = security::MembershipProof::NewNonce();
    if (!nonce.ok()) return RefuseStream(absl::UnavailableError(nonce.status().message()), false);
    nonce_ = *std::move(nonce);
  }
  pending_hello_ = std::move(hello);
  state_ = State::kAwaitingProof;
  v1::Control control;
  control.mutable_membership_challenge()->set_nonce(nonce_);
  stream_->Send(std::move(control));
}

void AgentSession::OnProof(const v1::MembershipProof& proof) {
  if (options_.job_key == nullptr) {
    // No key: the job's token keeper judges the token this collector issued
    // (trust on first use).
    pending_hello_.set_job_token(proof.issued_token());
    return Join(std::move(pending_hello_));
  }
  const security::MembershipProof::Claim claim{job_id_, rank_, pending_hello_.restart_count(),
                                               instance_};
  std::string secret = options_.job_key->JobSecret(job_id_);
  if (!security::MembershipProof::Verify(secret, nonce_, claim, proof.proof())) {
    return RefuseMembership("membership_proof.proof",
                            proof.proof().empty()
                                ? "presented no job secret (its answer to the membership "
                                  "challenge holds no proof)"
                                : "answered the membership challenge with a proof of a secret "
                                  "that is not the job's secret (or of another job, rank, "
                                  "restart or stream)");
  }
  // Proven: the job's token is its secret, as when a rank of protocol 1
  // presents it, so commands carrying the secret are authorised alike.
  pending_hello_.set_job_token(std::move(secret));
  Join(std::move(pending_hello_));
}

void AgentSession::RefuseMembership(absl::string_view field, absl::string_view what) {
  const absl::Status refusal = BadInput(
      absl::StatusCode::kPermissionDenied, field,
      absl::StrCat("job ", job_id_, ": rank ", rank_, " ", what,
                   "; this collector admits only ranks holding their job's secret, derived "
                   "from its job key (--job-key-file, or the collector's default key): start "
                   "the job with trainscope run or attach (they hand it to the ranks), run the "
                   "rank as the collector's user (the agent derives it from the key), or give "
                   "it `trainscope job-secret ",
                   job_id_,
                   "` as TRAINSCOPE_JOB_SECRET, TRAINSCOPE_JOB_SECRET_FILE or --token "
                   "(docs/security.md)"));
  // The attempt shows in the real job's status, not only to the refused.
  registry_->CountRefusedHello(job_id_, std::string(refusal.message()),
                               AttachHandshake::Origin(peer_, host_, pid_));
  RefuseStream(refusal);
}

void AgentSession::Join(v1::Hello hello) {
  absl::StatusOr<JobPipeline*> pipeline = registry_->GetOrCreate(job_id_);
  if (!pipeline.ok()) return RefuseStream(pipeline.status(), /*count=*/false);
  pipeline_ = *pipeline;
  validator_.emplace(hello.world_size(), options_.batch_limits);
  state_ = State::kAttaching;
  AttachRequest request{std::move(hello), stream_, peer_};
  absl::Status posted = pipeline_->Attach(
      std::move(request), [self = shared_from_this()](absl::StatusOr<AttachResult> result) {
        self->OnAttached(std::move(result));
      });
  if (!posted.ok()) {
    state_ = State::kClosed;
    RefuseStream(posted, /*count=*/false);
  }
}

void AgentSession::OnAttached(absl::StatusOr<AttachResult> result) {
  base::MutexLock lock(&mu_);
  if (!result.ok()) {
    state_ = State::kClosed;
    // Refusals by the job (token, duplicate rank, world size) are the peer's
    // mistake; shutdown or disk trouble is not.
    const absl::StatusCode code = result.status().code();
    const bool bad_input =
        code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kAborted;
    return RefuseStream(result.status(), bad_input);
  }
  connection_id_ = result->connection_id;
  last_sequence_ = result->resume_after_sequence;
  state_ = State::kActive;
  if (finished_) {
    // The transport went away while the pipeline was attaching it.
    DetachFromPipeline(std::nullopt, close_reason_.empty() ? "stream ended" : close_reason_);
    return;
  }
  MaybeFinish();
  MaybeRequestRead();
}

void AgentSession::OnBatch(v1::EventBatch& batch) {
  const uint64_t sequence = batch.sequence();
  if (said_goodbye_) {
    return RefuseStream(BadInput(
        absl::StatusCode::kFailedPrecondition, "message.order",
        absl::StrCat("batch ", sequence, " after goodbye; goodbye must be the last message")));
  }
  if (sequence <= last_sequence_) {
    const absl::Status duplicate = BadInput(
        absl::StatusCode::kInvalidArgument, "batch.sequence",
        absl::StrCat("duplicate batch ", sequence, ": batches up to ", last_sequence_,
                     " were already received from this agent; expected ", last_sequence_ + 1));
    counters_->Count(duplicate, Who());
    v1::Control control;
    control.mutable_reject()->set_sequence(sequence);
    control.mutable_reject()->set_reason(std::string(duplicate.message()));
    stream_->Send(std::move(control));
    return;
  }
  if (sequence != last_sequence_ + 1) {
    return RefuseStream(
        BadInput(absl::StatusCode::kFailedPrecondition, "batch.sequence",
                 absl::StrCat("job ", job_id_, " rank ", rank_, ": expected batch sequence ",
                              last_sequence_ + 1, ", got ", sequence,
                              "; batches are numbered without gaps (reconnect and resume after ",
                              last_sequence_, ")")));
  }
  last_sequence_ = sequence;

  v1::StreamBatch logged;
  logged.set_rank(rank_);
  logged.set_agent_instance_id(instance_);
  std::string refused_reason;
  uint64_t bytes = 0;
  absl::Status valid = absl::OkStatus();
  if (options_.memory_limiter != nullptr) {
    // Over the process' memory limit a batch is refused like an invalid one:
    // counted per rank, its events counted as refused by the agent.
    if (std::optional<std::string> why = options_.memory_limiter->Refusal()) {
      valid = BadInput(absl::StatusCode::kResourceExhausted, "batch.memory_limit",
                       absl::StrCat("job ", job_id_, " rank ", rank_, ": ", *why));
    }
  }
  if (valid.ok()) valid = validator_->Validate(batch);
  if (valid.ok()) {
    bytes = batch.ByteSizeLong();
    logged.mutable_batch()->Swap(&batch);
  } else {
    counters_->Count(valid, Who());
    refused_reason = std::string(valid.message());
    logged.set_refused_reason(refused_reason);
    logged.mutable_batch()->set_sequence(sequence);
    if (batch.has_drops()) *logged.mutable_batch()->mutable_drops() = batch.drops();
  }
  absl::Status posted = pipeline_->AppendBatch(
      connection_id_, std::move(logged), bytes,
      [self = shared_from_this(), sequence, bytes, refused_reason](absl::Status durable) {
        self->OnBatchDurable(sequence, bytes, refused_reason, std::move(durable));
      });
  if (!posted.ok()) return RefuseStream(posted, /*count=*/false);
  ++in_flight_;
  if (budget_ != nullptr) budget_->Acquire(bytes);
}

void AgentSession::OnBatchDurable(uint64_t sequence, uint64_t bytes,
                                  const std::string& refused_reason, absl::Status status) {
  base::MutexLock lock(&mu_);
  --in_flight_;
  if (budget_ != nullptr) budget_->Release(bytes);
  if (!status.ok()) {
    // Nothing after a lost batch may be acknowledged: the agent resends from
    // its resume point after reconnecting.
    if (!broken_) {
      broken_ = true;
      FinishWhenDrained(status);
    }
  } else if (!broken_) {
    v1::Control control;
    if (refused_reason.empty()) {
      control.mutable_ack()->set_up_to_sequence(sequence);
    } else {
      control.mutable_reject()->set_sequence(sequence);
      control.mutable_reject()->set_reason(refused_reason);
    }
    stream_->Send(std::move(control));
  }
  MaybeFinish();
  MaybeRequestRead();
}

void AgentSession::RefuseStream(const absl::Status& status, bool count) {
  if (count) counters_->Count(status, Who());
  if (state_ != State::kActive) state_ = State::kClosed;
  if (close_reason_.empty()) close_reason_ = std::string(status.message());
  FinishWhenDrained(status);
}

void AgentSession::FinishWhenDrained(absl::Status status) {
  if (!finish_) finish_ = std::move(status);
  MaybeFinish();
}

void AgentSession::MaybeFinish() {
  if (finished_ || !finish_ || in_flight_ > 0 || state_ == State::kAttaching) return;
  finished_ = true;
  stream_->Finish(*finish_);
  DetachFromPipeline(std::nullopt, close_reason_.empty() ? "stream ended" : close_reason_);
  if (state_ == State::kActive) state_ = State::kClosed;
}

void AgentSession::DetachFromPipeline(std::optional<v1::Goodbye> goodbye, std::string reason) {
  // While attaching, the connection id is not known yet: OnAttached detaches.
  if (detached_ || pipeline_ == nullptr || connection_id_ == 0) return;
  detached_ = true;
  pipeline_->Detach(connection_id_, std::move(goodbye), std::move(reason));
}

void AgentSession::OnReadsDone(absl::string_view reason) {
  base::MutexLock lock(&mu_);
  read_outstanding_ = false;
  reads_done_ = true;
  if (close_reason_.empty()) close_reason_ = std::string(reason);
  FinishWhenDrained(absl::OkStatus());
}

void AgentSession::OnStreamDone(absl::string_view reason) {
  base::MutexLock lock(&mu_);
  read_outstanding_ = false;
  reads_done_ = true;
  if (close_reason_.empty()) close_reason_ = std::string(reason);
  finished_ = true;
  if (!finish_) finish_ = absl::CancelledError(reason);
  DetachFromPipeline(std::nullopt, close_reason_);
  if (state_ == State::kActive) state_ = State::kClosed;
}

}  // namespace trainscope::collector
