#include "trainscope/collector/pipeline/attach_handshake.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::collector {

AttachHandshake::AttachHandshake(std::string job_id, Options options, AgentStreamTable* streams,
                                 JobTokenKeeper* tokens, const CommandRunner* commands)
    : job_id_(std::move(job_id)),
      options_(std::move(options)),
      streams_(streams),
      tokens_(tokens),
      commands_(commands) {}

std::string AttachHandshake::Origin(absl::string_view peer, absl::string_view host, uint32_t pid) {
  return absl::StrCat("peer ", peer, " (host '", host, "', pid ", pid, ")");
}

absl::Status AttachHandshake::Refuse(absl::Status status, absl::string_view from) {
  // Every refusal shows in the job's status (a rank that cannot join is not
  // invisible), besides the stream's end and the bad-input counters.
  streams_->CountRefusedHello(std::string(status.message()), std::string(from));
  return status;
}

absl::StatusOr<AttachHandshake::Admission> AttachHandshake::Admit(const v1::Hello& hello,
                                                                  absl::string_view from) {
  const uint32_t rank = hello.rank();
  if (absl::Status s = streams_->CheckWorldSize(hello); !s.ok()) {
    return Refuse(std::move(s), from);
  }
  // Membership first (a rank the job has seen needs the job's token,
  // generated or not): a process without it learns nothing of the rank's
  // stream and replaces none.
  // A rank needs the token while a stream of it is live or once it delivered
  // a batch (it had the HelloAck, so its agent has the token): an agent whose
  // first stream ended before its HelloAck (a hello timeout under load) never
  // got the generated token and comes back without it (at 1,024 streams 880
  // ranks were locked out so).
  const auto seen = streams_->ranks().find(rank);
  const bool rank_seen = seen != streams_->ranks().end() &&
                         (seen->second.connected() || seen->second.batches_received() > 0 ||
                          seen->second.events_received() > 0);
  absl::StatusOr<JobTokenKeeper::Admission> admitted =
      tokens_->AdmitRank(hello.job_token(), rank_seen, rank);
  if (!admitted.ok()) return Refuse(admitted.status(), from);
  if (admitted->generated && options_.notice) {
    options_.notice(absl::StrCat(
        "trainscope-collector: job ", job_id_, " attached without a token; generated one in ",
        tokens_->token_path().string(), " (mode 0600), also sent to rank ", rank));
  }

  // One live stream per rank: a reconnect or a newer incarnation replaces it.
  absl::StatusOr<std::optional<AgentStreamTable::Replacement>> replaced =
      streams_->FindReplaced(hello);
  if (!replaced.ok()) return Refuse(replaced.status(), from);
  if (replaced->has_value()) {
    const AgentStreamTable::Replacement& old = **replaced;
    streams_->Find(old.connection_id)
        ->stream->Finish(absl::AbortedError(absl::StrCat("job ", job_id_, ": rank ", rank,
                                                         ": this stream was replaced: ", old.why)));
  }
  return Admission{.ack_token = std::move(admitted->ack_token), .replaced = std::move(*replaced)};
}

v1::LogRecord AttachHandshake::OpenedRecord(const v1::Hello& hello) {
  v1::LogRecord record;
  v1::Hello* logged = record.mutable_stream_opened()->mutable_hello();
  *logged = hello;
  logged->clear_job_token();  // the log is not a place for secrets
  return record;
}

AttachHandshake::Joined AttachHandshake::Open(const v1::Hello& hello, const Admission& admission,
                                              std::shared_ptr<AgentStream> stream, std::string peer,
                                              const JobLogState& log, int64_t now_unix_ns) {
  Joined joined;
  joined.first_rank = streams_->world_size() == 0;
  joined.key = StreamKey{hello.rank(), hello.agent_instance_id()};
  if (auto it = log.streams.find(joined.key); it != log.streams.end()) {
    joined.resume_after_sequence = it->second.last_sequence;
  }
  joined.connection_id = streams_
                             ->Open(hello, std::move(stream), std::move(peer),
                                    joined.resume_after_sequence, now_unix_ns)
                             .id;
  joined.ack_token = admission.ack_token;
  joined.recording = hello.recording();
  // The highest version both speak (ValidateHello checked the ranges meet).
  joined.protocol_version = std::min(hello.protocol_version(), kProtocolVersion);
  return joined;
}

std::optional<JobCommand> AttachHandshake::PolicyCommand(const v1::Hello& hello,
                                                         bool policy_from_job) {
  if (!hello.halt_policy().enabled() || policy_from_job) return std::nullopt;
  // The job asked for its own policy (`trainscope run --halt-when ...`).
  JobCommand command;
  command.kind = JobCommand::Kind::kSetHaltPolicy;
  command.halt_policy = hello.halt_policy();
  command.requested_by = absl::StrCat("rank ", hello.rank(), "'s hello");
  return command;
}

absl::StatusOr<AttachResult> AttachHandshake::Acknowledge(const Joined& joined) {
  AgentStreamTable::Connection* connection = streams_->Find(joined.connection_id);
  if (connection == nullptr) {
    return absl::AbortedError(
        absl::StrCat("job ", job_id_, ": the stream was replaced before it was acknowledged"));
  }
  connection->hello_acked = true;
  v1::Control control;
  v1::HelloAck* ack = control.mutable_hello_ack();
  ack->set_resume_after_sequence(joined.resume_after_sequence);
  ack->set_job_token(joined.ack_token);
  ack->set_recording(commands_->recording().value_or(joined.recording));
  ack->set_sampling_period(commands_->sampling_period());
  ack->set_max_message_bytes(options_.max_message_bytes);
  ack->set_protocol_version(joined.protocol_version);
  if (commands_->loss_contribution().has_value()) {
    ack->set_loss_contribution(*commands_->loss_contribution());
  }
  connection->stream->Send(std::move(control));
  if (const auto& halt = commands_->halt_for_late_joiners(); halt.has_value()) {
    // A job that was halted stays halted for ranks that join late.
    v1::Control late_halt;
    *late_halt.mutable_halt() = *halt;
    connection->stream->Send(std::move(late_halt));
  }
  return AttachResult{joined.connection_id, joined.resume_after_sequence};
}

}  // namespace trainscope::collector
