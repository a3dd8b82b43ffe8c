#include "trainscope/tier/command_listener.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "trainscope/collector/pipeline/job_token.h"
#include "trainscope/tier/tier_subjects.h"

namespace trainscope::tier {

absl::StatusOr<collector::JobCommand> LocalCommand(const v1::TierCommand& command) {
  collector::JobCommand local;
  using Kind = collector::JobCommand::Kind;
  switch (command.kind()) {
    case v1::TierCommand::KIND_HALT:
      local.kind = Kind::kHalt;
      local.reason = command.halt().reason();
      local.halt_at_step = command.halt().halt_at_step();
      break;
    case v1::TierCommand::KIND_ENABLE_RECORDING:
      local.kind = Kind::kEnableRecording;
      local.sampling_period = command.sampling_period();
      break;
    case v1::TierCommand::KIND_DISABLE_RECORDING:
      local.kind = Kind::kDisableRecording;
      break;
    case v1::TierCommand::KIND_ENABLE_LOSS_CONTRIBUTION:
      local.kind = Kind::kEnableLossContribution;
      break;
    case v1::TierCommand::KIND_DISABLE_LOSS_CONTRIBUTION:
      local.kind = Kind::kDisableLossContribution;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("TierCommand.kind: ", static_cast<int>(command.kind()),
                       " is not a command this collector knows (halt, recording, loss "
                       "contribution)"));
  }
  local.requested_by = absl::StrCat(
      command.halt().requested_by().empty() ? "" : command.halt().requested_by() + " via ",
      "job-level collector ", command.issued_by());
  return local;
}

std::unique_ptr<CommandListener> CommandListener::Start(CommandListenerOptions options,
                                                        collector::JobRegistry* registry) {
  std::unique_ptr<CommandListener> listener(new CommandListener(std::move(options), registry));
  listener->thread_ = std::thread([l = listener.get()] { l->Run(); });
  return listener;
}

CommandListener::~CommandListener() { Stop(); }

void CommandListener::Stop() {
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    stop_requested_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t CommandListener::applied() const {
  base::MutexLock lock(&mu_);
  return applied_;
}

void CommandListener::Notice(absl::string_view line) const {
  if (options_.notice) {
    options_.notice(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

void CommandListener::Apply(const v1::TierCommand& command) {
  if (!command.command_id().empty() && !seen_.Insert(command.command_id(), absl::Now())) return;
  absl::StatusOr<collector::JobCommand> local = LocalCommand(command);
  if (!local.ok()) {
    Notice(absl::StrCat("trainscope-collector: a command from the job level was skipped: ",
                        local.status().message()));
    return;
  }
  if (RunLocally(command)) return;
  // No rank of that job here yet: hold the job's newest command of this kind.
  auto [it, inserted] = pending_.try_emplace(command.job_id());
  it->second[CommandSubject(command.job_id(), command.kind())] = command;
  if (inserted) {
    pending_order_.push_back(command.job_id());
    while (pending_order_.size() > kMaxPendingJobs) {
      pending_.erase(pending_order_.front());
      pending_order_.pop_front();
    }
  }
}

void CommandListener::ApplyPending() {
  for (auto job = pending_order_.begin(); job != pending_order_.end();) {
    auto it = pending_.find(*job);
    if (it == pending_.end()) {
      job = pending_order_.erase(job);
      continue;
    }
    if (!registry_->Find(*job).ok()) {
      ++job;
      continue;
    }
    for (const auto& [subject, command] : it->second) RunLocally(command);
    pending_.erase(it);
    job = pending_order_.erase(job);
  }
}

bool CommandListener::RunLocally(const v1::TierCommand& command) {
  absl::StatusOr<collector::JobCommand> local = LocalCommand(command);
  if (!local.ok()) return true;  // said by Apply
  if (!registry_->Find(command.job_id()).ok()) return false;
  absl::StatusOr<collector::JobToken> token =
      collector::ReadJobToken(options_.data_dir / "jobs" / command.job_id());
  if (token.ok()) local->token = token->value;
  const std::string job_id = command.job_id();
  const std::string what = collector::CommandName(local->kind);
  registry_->RunCommand(
      job_id, *local, absl::StrCat("job-level collector ", command.issued_by()),
      [this, job_id, what](absl::StatusOr<v1::CommandReply> reply) {
        if (!reply.ok()) {
          Notice(absl::StrCat("trainscope-collector: ", what, " of job ", job_id,
                              " from the job level failed here: ", reply.status().message()));
        }
      });
  base::MutexLock lock(&mu_);
  ++applied_;
  return true;
}

void CommandListener::Run() {
  std::unique_ptr<NatsClient> client;
  natsSubscription* sub = nullptr;
  bool said_unreachable = false;
  // A consumer per start (see the header): the last command per job subject
  // first, whatever an earlier process of this node had read.
  const std::string durable =
      absl::StrCat("node-", SubjectToken(options_.node), "-", absl::GetCurrentTimeNanos());
  for (;;) {
    {
      base::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    if (sub == nullptr) {
      absl::Status ready = absl::OkStatus();
      if (client == nullptr) {
        absl::StatusOr<std::unique_ptr<NatsClient>> connected = NatsClient::Connect(options_.nats);
        if (connected.ok()) {
          client = std::move(*connected);
        } else {
          ready = connected.status();
        }
      }
      if (ready.ok()) ready = client->EnsureStream(kCommandsStream, kAllCommands, options_.limits);
      if (ready.ok()) {
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = kCommandsStream;
        so.Config.AckPolicy = js_AckExplicit;
        so.Config.DeliverPolicy = js_DeliverLastPerSubject;
        so.Config.InactiveThreshold = absl::ToInt64Nanoseconds(absl::Minutes(10));
        so.Config.AckWait = absl::ToInt64Nanoseconds(absl::Seconds(10));
        jsErrCode err = static_cast<jsErrCode>(0);
        natsStatus s =
            js_PullSubscribe(&sub, client->js(), kAllCommands, durable.c_str(), nullptr, &so, &err);
        if (s != NATS_OK) {
          sub = nullptr;
          ready = NatsError(s, absl::StrCat("NATS at ", UrlWithoutCredentials(options_.nats.url),
                                            ": cannot consume commands as ", durable));
        }
      }
      if (!ready.ok()) {
        if (!said_unreachable) {
          Notice(absl::StrCat("trainscope-collector: job-level commands: ", ready.message(),
                              "; retrying every second"));
          said_unreachable = true;
        }
        const absl::Time retry_at = absl::Now() + absl::Seconds(1);
        base::MutexLock lock(&mu_);
        while (!stopping_ && !stop_requested_.WaitWithDeadline(&mu_, retry_at)) {
        }
        continue;
      }
      said_unreachable = false;
    }
    ApplyPending();
    natsMsgList list = {nullptr, 0};
    jsErrCode err = static_cast<jsErrCode>(0);
    natsStatus s = natsSubscription_Fetch(&list, sub, 16, 500, &err);
    if (s != NATS_OK && s != NATS_TIMEOUT) {
      const absl::Time retry_at = absl::Now() + absl::Milliseconds(250);
      base::MutexLock lock(&mu_);
      while (!stopping_ && !stop_requested_.WaitWithDeadline(&mu_, retry_at)) {
      }
      continue;
    }
    for (int i = 0; i < list.Count; ++i) {
      natsMsg* msg = list.Msgs[i];
      v1::TierCommand command;
      if (command.ParseFromArray(natsMsg_GetData(msg), natsMsg_GetDataLength(msg))) {
        Apply(command);
      } else {
        Notice("trainscope-collector: a job-level command that is not a TierCommand was skipped");
      }
      natsMsg_Ack(msg, nullptr);
    }
    natsMsgList_Destroy(&list);
  }
  if (sub != nullptr) {
    natsSubscription_Unsubscribe(sub);  // removes this start's consumer
    natsSubscription_Destroy(sub);
  }
}

}  // namespace trainscope::tier
