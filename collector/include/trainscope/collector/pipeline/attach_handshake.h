// The handshake of an agent stream joining a job: who may join, what the
// join is logged as, and what the stream is told once that is durable.
//
//  - Admit: the job takes no new streams while it is ending (EndStreams);
//    the world size must be the job's; membership comes before anything
//    about the rank's stream is decided: a rank the job has seen (a stream
//    of it is live, or it delivered a batch, so its agent had the HelloAck
//    and with it the job's token) must present the job's token
//    (JobTokenKeeper); one live stream per rank: a reconnect or a newer
//    incarnation replaces the old stream, which is ended here with ABORTED
//    (the caller logs its close), a second live stream of the rank is
//    refused. Every refusal is counted in the job's summary.
//  - OpenedRecord / Open: the StreamOpened record (without the token: the
//    log is no place for secrets), then the stream registered as its rank's
//    live one, resuming after the last batch the log holds of this agent
//    instance.
//  - PolicyCommand: a job may bring its own halt policy in its hello
//    (`trainscope run --halt-when ...`); it applies unless the job set one.
//  - Acknowledge, after the group commit: the HelloAck (resume point, token,
//    recording, sampling, loss contribution, message limit, protocol
//    version), then, to a rank joining a halted job, the job's halt.
//
// Usage (the pipeline thread):
//   AttachHandshake handshake(job_id, {.max_message_bytes = ...}, &streams, &tokens, &commands);
//   if (handshake.ending()) refuse with *handshake.ending();
//   absl::StatusOr<AttachHandshake::Admission> admitted = handshake.Admit(hello);
//   if (admitted->replaced) log the close of admitted->replaced->connection_id;
//   log AttachHandshake::OpenedRecord(hello);
//   AttachHandshake::Joined joined = handshake.Open(hello, *admitted, stream, peer, log.state(),
//   now); after the sync: done(handshake.Acknowledge(joined));
//
// Threading: not thread-safe; owned by the job's pipeline thread, like the
// table, the token keeper and the command runner it works with.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_ATTACH_HANDSHAKE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_ATTACH_HANDSHAKE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/ingest/agent_stream.h"
#include "trainscope/collector/pipeline/agent_stream_table.h"
#include "trainscope/collector/pipeline/command_runner.h"
#include "trainscope/collector/pipeline/job_token_keeper.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

struct AttachRequest {
  trainscope::v1::Hello hello;  // already validated (ValidateHello)
  std::shared_ptr<AgentStream> stream;
  std::string peer;  // transport address, for messages
};

struct AttachResult {
  uint64_t connection_id = 0;          // names this stream in later calls
  uint64_t resume_after_sequence = 0;  // last durable batch of this agent instance
};

class AttachHandshake {
 public:
  struct Options {
    uint64_t max_message_bytes = 16u << 20;  // told to agents in HelloAck
    // One-line notices (a generated token); null: none.
    std::function<void(absl::string_view)> notice;
  };
  // What Admit decided.
  struct Admission {
    // For the HelloAck: the token the collector generated, sent to a rank
    // that presented none ("" when it presented the job's token).
    std::string ack_token;
    // The rank's live stream this one replaces (already ended with ABORTED);
    // the caller logs its close.
    std::optional<AgentStreamTable::Replacement> replaced;
  };
  // A stream that joined, until its HelloAck is out.
  struct Joined {
    uint64_t connection_id = 0;
    uint64_t resume_after_sequence = 0;
    StreamKey key;
    bool first_rank = false;  // the job's first stream ever (the index gets its row)
    // What the HelloAck says that the hello decided.
    std::string ack_token;
    bool recording = false;         // the agent's own setting, unless a command set one
    uint32_t protocol_version = 0;  // the highest both sides speak
  };

  // The pointers must outlive the handshake.
  AttachHandshake(std::string job_id, Options options, AgentStreamTable* streams,
                  JobTokenKeeper* tokens, const CommandRunner* commands);

  // From now on Admit's caller refuses every stream with `status` (the
  // collector is shutting down); set once, by EndStreams.
  void RefuseNewStreams(absl::Status status) { ending_ = std::move(status); }
  const std::optional<absl::Status>& ending() const { return ending_; }

  // The checks above, in order; a refusal names the hello's field and is
  // counted in the job's summary (AgentStreamTable::CountRefusedHello).
  // FAILED_PRECONDITION: another world size; PERMISSION_DENIED: no proof of
  // membership; ALREADY_EXISTS: a second live stream of the rank;
  // UNAVAILABLE: a generated token could not be stored. `from`
  // (Origin()) is shown with a refusal in the job's status.
  absl::StatusOr<Admission> Admit(const trainscope::v1::Hello& hello, absl::string_view from = "");

  // Where a Hello came from, for the job's status: "peer <peer> (host 'h',
  // pid N)". Only the peer is the transport's; host and pid are claims.
  static std::string Origin(absl::string_view peer, absl::string_view host, uint32_t pid);

  // The record that logs the stream's opening: the hello without its token.
  static trainscope::v1::LogRecord OpenedRecord(const trainscope::v1::Hello& hello);

  // Registers the admitted stream as its rank's live one; `log`: the job's
  // log state, for the resume point of this agent instance.
  Joined Open(const trainscope::v1::Hello& hello, const Admission& admission,
              std::shared_ptr<AgentStream> stream, std::string peer, const JobLogState& log,
              int64_t now_unix_ns);

  // The command that puts the hello's halt policy in force, when it brings
  // one and the job has not set its own (`policy_from_job`).
  static std::optional<JobCommand> PolicyCommand(const trainscope::v1::Hello& hello,
                                                 bool policy_from_job);

  // Once the opening is durable: sends the HelloAck, then the job's halt to
  // a rank joining a halted job, and from then on the stream gets control
  // messages. ABORTED when the stream was replaced before that.
  absl::StatusOr<AttachResult> Acknowledge(const Joined& joined);

 private:
  absl::Status Refuse(absl::Status status, absl::string_view from);

  const std::string job_id_;
  const Options options_;
  AgentStreamTable* const streams_;
  JobTokenKeeper* const tokens_;
  const CommandRunner* const commands_;
  std::optional<absl::Status> ending_;  // set by RefuseNewStreams
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_ATTACH_HANDSHAKE_H_
