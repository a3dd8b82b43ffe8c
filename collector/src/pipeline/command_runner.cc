#include "trainscope/collector/pipeline/command_runner.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/halt_policy_spec.h"

namespace trainscope::collector {

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

std::optional<v1::HaltPolicy> CommandRunner::Recover(
    const std::vector<v1::CommandRecord>& commands) {
  std::optional<v1::HaltPolicy> policy;
  commands_ = commands;
  for (const v1::CommandRecord& c : commands_) {
    if (c.command() == "halt") {
      halted_ = true;
      // Ranks that reconnect after a collector restart still stop where the
      // others were told to.
      v1::HaltRequest halt;
      halt.set_halt_id(c.halt_id());
      halt.set_reason(c.reason());
      halt.set_requested_by(c.requested_by());
      halt.set_requested_unix_ns(c.requested_unix_ns());
      halt.set_halt_at_step(c.halt_at_step());
      halt_ = std::move(halt);
    }
    if (c.command() == "enable") recording_ = true;
    if (c.command() == "disable") recording_ = false;
    if (c.command() == "enable-loss-contribution") loss_contribution_ = true;
    if (c.command() == "disable-loss-contribution") loss_contribution_ = false;
    if (c.command() == "policy") policy = c.halt_policy();
    next_halt_id_ = std::max(next_halt_id_, c.halt_id() + 1);
  }
  return policy;
}

absl::Status CommandRunner::Authorize(const JobCommand& command) const {
  return tokens_->AuthorizeCommand(command.token);
}

absl::Status CommandRunner::Admit(const JobCommand& command, v1::JobState state) const {
  if (command.kind != JobCommand::Kind::kHalt) return absl::OkStatus();
  if (state == v1::JOB_STATE_FINISHED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id_, " is finished (every rank said goodbye): there is no rank left to halt"));
  }
  if (state == v1::JOB_STATE_HALTED || halted_) {
    std::string first = "a halt";
    if (halt_.has_value()) {
      first = absl::StrCat("halt ", halt_->halt_id());
      if (!halt_->requested_by().empty()) absl::StrAppend(&first, " by ", halt_->requested_by());
      absl::StrAppend(&first, halt_->halt_at_step() > 0
                                  ? absl::StrCat(" at step ", halt_->halt_at_step())
                                  : std::string(" at the next step boundary"));
      if (!halt_->reason().empty()) absl::StrAppend(&first, " (", halt_->reason(), ")");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id_, " is already halted: ", first, " was sent; its ranks stop there"));
  }
  return absl::OkStatus();
}

uint64_t CommandRunner::HaltMarginSteps(int64_t step_ns) const {
  if (step_ns <= 0) return halt_margin_.steps;
  const uint64_t to_cover_lead =
      static_cast<uint64_t>((halt_margin_.lead_ns + step_ns - 1) / step_ns);
  return std::clamp(to_cover_lead, halt_margin_.steps,
                    std::max(halt_margin_.steps, halt_margin_.max_steps));
}

CommandRunner::Prepared CommandRunner::Prepare(const JobCommand& command, const JobView& job) {
  Prepared prepared;
  v1::CommandRecord& record = prepared.record;
  record.set_command(CommandName(command.kind));
  record.set_reason(command.reason);
  record.set_requested_by(command.requested_by);
  record.set_requested_unix_ns(job.now_unix_ns);
  record.set_ranks_reached(job.reachable_ranks);
  v1::Control& control = prepared.control;
  switch (command.kind) {
    case JobCommand::Kind::kHalt: {
      record.set_halt_id(next_halt_id_++);
      const uint64_t margin = job.any_step ? HaltMarginSteps(job.step_ns) : 0;
      const uint64_t halt_at_step = command.halt_at_step > 0 ? command.halt_at_step
                                    : job.any_step         ? job.highest_step + margin
                                                           : 0;
      record.set_halt_at_step(halt_at_step);
      record.set_halt_margin_steps(margin);
      v1::HaltRequest* halt = control.mutable_halt();
      halt->set_halt_id(record.halt_id());
      halt->set_reason(command.reason);
      halt->set_requested_by(command.requested_by);
      halt->set_requested_unix_ns(record.requested_unix_ns());
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
    case JobCommand::Kind::kSetHaltPolicy:
      *record.mutable_halt_policy() = command.halt_policy;
      record.set_reason(DescribeHaltPolicy(command.halt_policy));
      prepared.policy = command.halt_policy;
      break;
  }
  commands_.push_back(record);
  return prepared;
}

void CommandRunner::Commit(const Prepared& prepared) {
  if (prepared.control.has_halt()) halt_ = prepared.control.halt();
}

v1::CommandReply CommandRunner::Reply(const Prepared& prepared, uint32_t reached,
                                      uint32_t world_size) const {
  v1::CommandReply reply;
  reply.set_ranks_reached(reached);
  if (prepared.policy.has_value()) {
    reply.set_message(absl::StrCat("job ", job_id_, ": ", DescribeHaltPolicy(*prepared.policy)));
  } else {
    reply.set_message(absl::StrCat(prepared.record.command(), " sent to ", reached,
                                   " connected rank", reached == 1 ? "" : "s", " of job ",
                                   job_id_, " (world size ", world_size, ")"));
  }
  if (prepared.control.has_halt()) {
    const uint64_t step = prepared.control.halt().halt_at_step();
    absl::StrAppend(reply.mutable_message(),
                    step == 0 ? "; halting at the next step boundary (no step reported yet)"
                              : absl::StrCat("; halting at step ", step));
  }
  return reply;
}

}  // namespace trainscope::collector
