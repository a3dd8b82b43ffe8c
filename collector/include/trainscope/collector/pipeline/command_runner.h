// Turns the commands that change a job (halt, recording, loss contribution,
// halt policy) into what is logged and what is sent, and keeps the job
// state they set: halted and where, recording on or off, loss contribution.
//
// Usage (on the pipeline thread):
//   CommandRunner runner(job_id, {.steps = 2, .lead_ns = 1'000'000'000}, &token_keeper);
//   runner.Recover(log.state().commands);
//   RETURN_IF_ERROR(runner.Authorize(command));           // the job's token
//   RETURN_IF_ERROR(runner.Admit(command, job_state));    // not a halt of a finished job
//   CommandRunner::Prepared p = runner.Prepare(command, {progress.Highest()...});
//   log p.record; after the sync: runner.Commit(p); send p.control to every acked rank;
//   reply with CommandRunner::Reply(p, reached, world_size)
//
// A halt stops every rank at the same boundary, so that no rank is left
// waiting for the others in a collective: (highest step any rank reported)
// + a margin, 0 when no step was seen. The margin is halt_step_margin steps,
// or more when steps are short: as many as run in halt_lead_ns, so that a
// rank whose agent reads the halt late (a starved thread on a loaded host)
// has not passed the boundary yet. It holds for ranks that connect later too
// (halt_for_late_joiners).
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_COMMAND_RUNNER_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_COMMAND_RUNNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "trainscope/collector/pipeline/job_token_keeper.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/commands.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

struct JobCommand {
  enum class Kind {
    kHalt,
    kEnableRecording,
    kDisableRecording,
    kSetHaltPolicy,
    kEnableLossContribution,
    kDisableLossContribution,
  };
  Kind kind = Kind::kHalt;
  std::string token;
  std::string reason;
  std::string requested_by;
  uint32_t sampling_period = 0;            // recording commands only
  trainscope::v1::HaltPolicy halt_policy;  // kSetHaltPolicy only
  // kHalt from a job-level collector (tier/): the boundary it chose from every
  // host's ranks, which each node must use as is so that all ranks stop at
  // the same step; 0: chosen here from this collector's ranks.
  uint64_t halt_at_step = 0;
};

// The command's name in logs and replies ("halt", "enable", "policy", ...).
const char* CommandName(JobCommand::Kind kind);

class CommandRunner {
 public:
  // What a command becomes: the log's record and the message for the ranks
  // (no body for a policy, which stays in the collector).
  struct Prepared {
    trainscope::v1::CommandRecord record;
    trainscope::v1::Control control;
    std::optional<trainscope::v1::HaltPolicy> policy;  // kSetHaltPolicy only
  };
  // What Prepare needs to know about the job.
  struct JobView {
    bool any_step = false;     // some rank reported a step mark
    uint64_t highest_step = 0;
    int64_t step_ns = 0;  // the shortest recent step time (RankStepProgress); 0: unknown
    uint32_t reachable_ranks = 0;  // streams that got their HelloAck
    int64_t now_unix_ns = 0;
  };

  // `tokens` must outlive the runner.
  struct HaltMargin {
    uint64_t steps = 2;                  // at least this many steps ...
    int64_t lead_ns = 1'000'000'000;     // ... and at least this long
    uint64_t max_steps = 10'000;         // ... but never more steps than this
  };
  CommandRunner(std::string job_id, HaltMargin halt_margin, const JobTokenKeeper* tokens)
      : job_id_(std::move(job_id)), halt_margin_(halt_margin), tokens_(tokens) {}

  // The steps between the highest reported step and a halt's boundary.
  uint64_t HaltMarginSteps(int64_t step_ns) const;

  // Restores the state the logged commands set; returns the last halt
  // policy a command set, if any.
  std::optional<trainscope::v1::HaltPolicy> Recover(
      const std::vector<trainscope::v1::CommandRecord>& commands);

  // The token check; a refusal names the field and the job.
  absl::Status Authorize(const JobCommand& command) const;

  // Whether `command` can still change a job in `state` (the collector's
  // JobState): a halt of a finished job would reach no rank yet "succeed",
  // and one of a halted job would only move the boundary its ranks were
  // told (issue 23.5). A refusal names the job and its state.
  absl::Status Admit(const JobCommand& command, trainscope::v1::JobState state) const;

  // Records the command and updates the state it sets (a halt policy must
  // have been applied by the caller first).
  Prepared Prepare(const JobCommand& command, const JobView& job);
  // Once the command is durable: a halt now also goes to ranks that connect
  // later. Called in completion order, so that a rank acked in the same round
  // gets the halt exactly once.
  void Commit(const Prepared& prepared);

  // The reply to the command's caller.
  trainscope::v1::CommandReply Reply(const Prepared& prepared, uint32_t reached,
                                     uint32_t world_size) const;

  bool halted() const { return halted_; }
  const std::optional<trainscope::v1::HaltRequest>& halt_for_late_joiners() const {
    return halt_;
  }
  std::optional<bool> recording() const { return recording_; }  // unset: as agents report
  uint32_t sampling_period() const { return sampling_period_; }
  std::optional<bool> loss_contribution() const { return loss_contribution_; }
  const std::vector<trainscope::v1::CommandRecord>& commands() const { return commands_; }

 private:
  const std::string job_id_;
  const HaltMargin halt_margin_;
  const JobTokenKeeper* const tokens_;
  std::vector<trainscope::v1::CommandRecord> commands_;
  uint64_t next_halt_id_ = 1;
  bool halted_ = false;
  // The halt every rank gets, including ranks that connect after it.
  std::optional<trainscope::v1::HaltRequest> halt_;
  std::optional<bool> recording_;
  uint32_t sampling_period_ = 0;
  std::optional<bool> loss_contribution_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_COMMAND_RUNNER_H_
