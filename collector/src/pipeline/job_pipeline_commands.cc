// JobPipeline: commands that change a job (halt, recording, halt policy)
// and their token check (see job_pipeline.h).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline_clock.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {
namespace {

const char* CommandName(JobCommand::Kind kind) {
  switch (kind) {
    case JobCommand::Kind::kHalt:
      return "halt";
    case JobCommand::Kind::kEnableRecording:
      return "enable";
    case JobCommand::Kind::kDisableRecording:
      return "disable";
    case JobCommand::Kind::kSetHaltPolicy:
      return "policy";
    case JobCommand::Kind::kEnableLossContribution:
      return "enable-loss-contribution";
    case JobCommand::Kind::kDisableLossContribution:
      return "disable-loss-contribution";
  }
  return "?";
}

}  // namespace

void JobPipeline::RunCommand(JobCommand command,
                             std::function<void(absl::StatusOr<v1::CommandReply>)> done) {
  Post([this, command = std::move(command), done = std::move(done)](bool run) mutable {
    if (!run) return done(Stopped());
    DoRunCommand(command, done);
  });
}

void JobPipeline::CountBadCommand(const absl::Status& status, absl::string_view who) {
  if (options_.counters != nullptr) options_.counters->Count(status, who);
}

void JobPipeline::DoRunCommand(JobCommand& command,
                               std::function<void(absl::StatusOr<v1::CommandReply>)>& done) {
  const char* name = CommandName(command.kind);
  const std::string who =
      command.requested_by.empty()
          ? absl::StrCat("command ", name, " for job ", job_id_)
          : absl::StrCat(command.requested_by, " (", name, " job ", job_id_, ")");
  absl::Status refused;
  if (token_.value.empty()) {
    refused = absl::FailedPreconditionError(
        absl::StrCat("job ", job_id_,
                     " has no token on record yet (no rank has attached), so it "
                     "cannot be changed"));
  } else if (command.token.empty()) {
    refused = BadInput(absl::StatusCode::kPermissionDenied, "command.token",
                       absl::StrCat("job ", job_id_,
                                    ": missing job token; commands that change a "
                                    "job must carry the token the job attached with "
                                    "(or the one the collector generated, in ",
                                    (job_dir_ / "token").string(), ")"));
  } else if (!TokensEqual(command.token, token_.value)) {
    refused = BadInput(absl::StatusCode::kPermissionDenied, "command.token",
                       absl::StrCat("job ", job_id_, ": wrong job token"));
  }
  if (!refused.ok()) {
    CountBadCommand(refused, who);
    return done(refused);
  }
  ExecuteCommand(command, done);
}

void JobPipeline::ExecuteCommand(JobCommand& command,
                                 std::function<void(absl::StatusOr<v1::CommandReply>)>& done) {
  const char* name = CommandName(command.kind);
  v1::CommandRecord command_record;
  command_record.set_command(name);
  command_record.set_reason(command.reason);
  command_record.set_requested_by(command.requested_by);
  command_record.set_requested_unix_ns(NowUnixNs());
  uint32_t reachable = 0;
  for (const auto& [id, connection] : connections_) reachable += connection.hello_acked ? 1 : 0;
  command_record.set_ranks_reached(reachable);
  v1::Control control;
  switch (command.kind) {
    case JobCommand::Kind::kHalt: {
      command_record.set_halt_id(next_halt_id_++);
      // Every rank stops at the same boundary, a margin past the furthest
      // rank, so that no rank is left waiting for the others in a collective.
      uint64_t halt_at_step = 0;
      if (!max_step_by_rank_.empty()) {
        uint64_t highest = 0;
        for (const auto& [rank, step] : max_step_by_rank_) highest = std::max(highest, step);
        halt_at_step = highest + options_.halt_step_margin;
      }
      command_record.set_halt_at_step(halt_at_step);
      v1::HaltRequest* halt = control.mutable_halt();
      halt->set_halt_id(command_record.halt_id());
      halt->set_reason(command.reason);
      halt->set_requested_by(command.requested_by);
      halt->set_requested_unix_ns(command_record.requested_unix_ns());
      halt->set_halt_at_step(halt_at_step);
      halted_ = true;
      break;
    }
    case JobCommand::Kind::kEnableRecording:
    case JobCommand::Kind::kDisableRecording: {
      const bool enabled = command.kind == JobCommand::Kind::kEnableRecording;
      control.mutable_set_recording()->set_enabled(enabled);
      control.mutable_set_recording()->set_sampling_period(command.sampling_period);
      recording_ = enabled;
      sampling_period_ = command.sampling_period;
      break;
    }
    case JobCommand::Kind::kEnableLossContribution:
    case JobCommand::Kind::kDisableLossContribution: {
      const bool enabled = command.kind == JobCommand::Kind::kEnableLossContribution;
      control.mutable_set_loss_contribution()->set_enabled(enabled);
      loss_contribution_ = enabled;
      break;
    }
    case JobCommand::Kind::kSetHaltPolicy: {
      if (absl::Status applied = ApplyHaltPolicy(command.halt_policy, command.requested_by);
          !applied.ok()) {
        return done(applied);
      }
      halt_policy_from_job_ = true;
      *command_record.mutable_halt_policy() = command.halt_policy;
      command_record.set_reason(DescribeHaltPolicy(command.halt_policy));
      break;
    }
  }
  v1::LogRecord record;
  *record.mutable_command() = command_record;
  const absl::Status appended = AppendRecord(record);
  commands_.push_back(command_record);
  v1::FeedUpdate update;
  *update.mutable_command() = command_record;
  QueueFeed(std::move(update));
  summary_changed_ = true;

  std::optional<v1::HaltPolicy> policy;
  if (command.kind == JobCommand::Kind::kSetHaltPolicy) policy = command.halt_policy;
  after_sync_.push_back([this, appended, control = std::move(control), name, policy,
                         done = std::move(done)](const absl::Status& sync_status) mutable {
    absl::Status status = appended.ok() ? sync_status : appended;
    if (!status.ok()) return done(status);
    // Set here, once durable and in completion order, so that a rank acked in
    // this round gets the halt exactly once: from this loop or after its HelloAck.
    if (control.has_halt()) halt_ = control.halt();
    uint32_t reached = 0;
    for (auto& [id, connection] : connections_) {
      if (!connection.hello_acked) continue;
      if (control.body_case() != v1::Control::BODY_NOT_SET) connection.stream->Send(control);
      ++reached;
    }
    v1::CommandReply reply;
    reply.set_ranks_reached(reached);
    reply.set_message(absl::StrCat(name, " sent to ", reached, " connected rank",
                                   reached == 1 ? "" : "s", " of job ", job_id_, " (world size ",
                                   world_size_, ")"));
    if (policy.has_value()) {
      reply.set_message(absl::StrCat("job ", job_id_, ": ", DescribeHaltPolicy(*policy)));
    }
    if (control.has_halt()) {
      const uint64_t step = control.halt().halt_at_step();
      absl::StrAppend(reply.mutable_message(),
                      step == 0 ? "; halting at the next step boundary (no step reported yet)"
                                : absl::StrCat("; halting at step ", step));
    }
    done(std::move(reply));
  });
}

}  // namespace trainscope::collector
