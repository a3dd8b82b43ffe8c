// The node collector's end of the tier's command path (docs/scale.md): takes
// the job-level collector's commands (TierCommand on trainscope.cmd.<job>)
// from a durable JetStream consumer of its own and runs each on the local
// pipeline of that job, with the job's own token, so that a halt reaches
// every local rank at the job-wide step boundary.
//
// Usage (trainscope-collector --publish ...):
//   ASSIGN_OR_RETURN(auto listener, CommandListener::Start(options, &server->registry()));
//   ... listener->Stop();   // before the registry stops
//
// Commands are state, kept per job and kind (CommandSubject(job, kind)): each
// start makes a consumer of its own (node-<node name>-<start time>, removed at
// Stop, or by the server after 10 idle minutes) that first delivers the last
// command of every job subject, then the new ones. So a command issued while
// this collector was down is read when it comes back, and one for a job with
// no ranks here yet is held (the newest per job and kind, at most
// kMaxPendingJobs jobs) and run when the job's first rank arrives: a node that
// gets a rank after the job was halted halts it. Each command id runs once
// (RecentIds). NATS unreachable: retried every second, said once on stderr.
//
// Threading: one thread of its own; Stop joins it. `registry` must outlive it.
#ifndef TRAINSCOPE_TIER_COMMAND_LISTENER_H_
#define TRAINSCOPE_TIER_COMMAND_LISTENER_H_

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/pipeline/command_runner.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/tier/nats_client.h"
#include "trainscope/tier/recent_ids.h"
#include "trainscope/v1/tier.pb.h"

namespace trainscope::tier {

struct CommandListenerOptions {
  NatsConfig nats;
  std::string node;
  std::filesystem::path data_dir;  // where the local jobs' tokens are
  StreamLimits limits;
  std::function<void(absl::string_view)> notice;  // default: stderr
};

// The local command a TierCommand becomes (token and job left to the caller);
// INVALID_ARGUMENT for a kind this collector does not know.
absl::StatusOr<collector::JobCommand> LocalCommand(const trainscope::v1::TierCommand& command);

class CommandListener {
 public:
  static std::unique_ptr<CommandListener> Start(CommandListenerOptions options,
                                                collector::JobRegistry* registry);
  ~CommandListener();  // Stop()
  void Stop();

  uint64_t applied() const;  // commands run on a local pipeline

  static constexpr size_t kMaxPendingJobs = 4096;

 private:
  CommandListener(CommandListenerOptions options, collector::JobRegistry* registry)
      : options_(std::move(options)), registry_(registry) {}
  void Run();
  void Apply(const trainscope::v1::TierCommand& command);
  // Runs `command` on its local job; false when no rank of it is here.
  bool RunLocally(const trainscope::v1::TierCommand& command);
  // Runs the held commands of the jobs that have ranks here by now.
  void ApplyPending();
  void Notice(absl::string_view line) const;

  const CommandListenerOptions options_;
  collector::JobRegistry* const registry_;
  mutable base::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  base::CondVar stop_requested_;  // signalled when stopping_ is set
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;
  // Listener thread only.
  RecentIds seen_{absl::Hours(1), 100000};  // command ids run or held
  // job -> CommandSubject(job, kind) -> the newest command, for jobs with no
  // rank here yet; pending_order_ is the jobs oldest first (the bound).
  std::map<std::string, std::map<std::string, trainscope::v1::TierCommand>> pending_;
  std::deque<std::string> pending_order_;
  std::thread thread_;
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_COMMAND_LISTENER_H_
