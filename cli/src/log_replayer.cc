#include "trainscope/cli/log_replayer.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <random>
#include <system_error>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainscope/base/mutex.h"
#include "trainscope/base/notification.h"
#include "trainscope/cli/formatting.h"
#include "trainscope/cli/replay_stream.h"
#include "trainscope/client/commands_client.h"
#include "trainscope/collector/export/json_string.h"
#include "trainscope/collector/store/log_reader.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::cli {
namespace {

using collector::JsonString;

constexpr char kLogDirHint[] =
    "a log dir is one job's directory in the collector's data dir, e.g. "
    "./trainscope-data/jobs/JOB, holding segment-*.tslog files";

uint64_t RandomInstanceId() {
  std::random_device device;
  std::mt19937_64 generator((static_cast<uint64_t>(device()) << 32) ^ device());
  uint64_t id = 0;
  while (id == 0) id = generator();
  return id;
}

// A clear message for a path that is not a job log, before LogReader's own.
absl::Status CheckLogDir(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) {
    return absl::NotFoundError(
        absl::StrCat("log dir '", dir.string(), "' does not exist (", kLogDirHint, ")"));
  }
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", dir.string(), "' is not a directory (", kLogDirHint, ")"));
  }
  if (std::filesystem::is_directory(dir / "jobs", error)) {
    std::vector<std::string> jobs;
    for (const auto& entry : std::filesystem::directory_iterator(dir / "jobs", error)) {
      if (entry.is_directory()) jobs.push_back(entry.path().filename().string());
      if (jobs.size() == 10) break;
    }
    std::sort(jobs.begin(), jobs.end());
    return absl::InvalidArgumentError(absl::StrCat(
        "'", dir.string(), "' is a collector data dir, not one job's log; pass ",
        (dir / "jobs" / "JOB").string(),
        jobs.empty() ? std::string(" (it holds no job yet)")
                     : absl::StrCat(" (jobs there: ", absl::StrJoin(jobs, ", "), ")")));
  }
  return absl::OkStatus();
}

// What Run shares with its progress thread: the streams (added by the
// sending thread) and the totals it prints.
class ReplayState {
 public:
  void Add(std::unique_ptr<ReplayStream> stream) {
    base::MutexLock lock(&mu_);
    streams_.push_back(std::move(stream));
  }
  ReplayStream* Get(size_t index) {
    base::MutexLock lock(&mu_);
    return index < streams_.size() ? streams_[index].get() : nullptr;
  }
  size_t size() {
    base::MutexLock lock(&mu_);
    return streams_.size();
  }
  // Sums the streams' counters into `summary`.
  void Totals(LogReplayer::Summary* summary) {
    base::MutexLock lock(&mu_);
    summary->batches_acked = summary->batches_rejected = summary->batches_unacked = 0;
    for (const auto& stream : streams_) {
      const ReplayStream::Counters counters = stream->counters();
      summary->batches_acked += counters.acked;
      summary->batches_rejected += counters.rejected;
      summary->batches_unacked += counters.unsettled;
    }
  }
  // Cancels streams that waited longer than `limit` without a word from the
  // collector; returns their labels.
  std::vector<std::string> CancelStalled(absl::Duration limit) {
    base::MutexLock lock(&mu_);
    std::vector<std::string> cancelled;
    const absl::Time now = absl::Now();
    for (const auto& stream : streams_) {
      if (stream->Stalled(now, limit)) {
        stream->Cancel();
        cancelled.push_back(stream->label());
      }
    }
    return cancelled;
  }
  void CancelAll() {
    base::MutexLock lock(&mu_);
    for (const auto& stream : streams_) stream->Cancel();
  }
  void Collect(LogReplayer::Summary* summary) {
    base::MutexLock lock(&mu_);
    for (const auto& stream : streams_) {
      for (std::string& reason : stream->reject_reasons()) {
        summary->errors.push_back(absl::StrCat(stream->label(), " rejected ", reason));
      }
      if (!stream->halt_reason().has_value()) continue;
      summary->halted = *stream->halt_reason();
    }
  }
  void Clear() {
    base::MutexLock lock(&mu_);
    streams_.clear();
  }

 private:
  base::Mutex mu_;
  std::vector<std::unique_ptr<ReplayStream>> streams_ ABSL_GUARDED_BY(mu_);
};

// Sleeps until `until`, waking every 100 ms to honour `stop`.
void SleepUntil(absl::Time until, const std::atomic<bool>* stop) {
  while (absl::Now() < until) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return;
    absl::SleepFor(std::min(until - absl::Now(), absl::Milliseconds(100)));
  }
}

}  // namespace

std::string LogReplayer::Summary::Line(const std::filesystem::path& dir) const {
  std::string line = absl::StrCat(
      "replayed ", dir.string(), " as job ", job_id, ": ", streams,
      streams == 1 ? " stream, " : " streams, ", FormatCount(batches_sent), "/",
      FormatCount(batches_planned), " batches sent (", FormatCount(events_sent), " events), ",
      FormatCount(batches_acked), " acknowledged, ", FormatCount(batches_rejected), " rejected, ",
      FormatCount(batches_unacked), " unacknowledged");
  if (interrupted) absl::StrAppend(&line, " (interrupted)");
  if (halted.has_value()) absl::StrAppend(&line, " (halted by the collector: ", *halted, ")");
  return line;
}

std::string LogReplayer::Summary::Json(const std::filesystem::path& dir) const {
  std::vector<std::string> quoted_errors;
  for (const std::string& error : errors) quoted_errors.push_back(JsonString(error));
  return absl::StrCat(
      "{\"log_dir\":", JsonString(dir.string()), ",\"job_id\":", JsonString(job_id),
      ",\"streams\":", streams, ",\"batches_planned\":", batches_planned,
      ",\"batches_sent\":", batches_sent, ",\"events_sent\":", events_sent,
      ",\"batches_acked\":", batches_acked, ",\"batches_rejected\":", batches_rejected,
      ",\"batches_unacked\":", batches_unacked, ",\"interrupted\":", interrupted ? "true" : "false",
      ",\"halted\":", halted.has_value() ? JsonString(*halted) : "null",
      ",\"ok\":", ok() ? "true" : "false", ",\"errors\":[", absl::StrJoin(quoted_errors, ","),
      "]}");
}

absl::StatusOr<ReplayPlanner> LogReplayer::PlanLog(const std::filesystem::path& dir,
                                                   ReplayPlanner::Options options) {
  if (absl::Status status = CheckLogDir(dir); !status.ok()) return status;
  absl::StatusOr<collector::LogReader> reader = collector::LogReader::Open(dir);
  if (!reader.ok()) {
    return absl::Status(reader.status().code(),
                        absl::StrCat(reader.status().message(), " (", kLogDirHint, ")"));
  }
  if (!options.new_instance_id) options.new_instance_id = [] { return uint64_t{0}; };
  ReplayPlanner planner(std::move(options));
  std::vector<ReplayAction> actions;
  collector::ReadStats stats;
  absl::Status read = reader->ForEach(
      [&](const trainscope::v1::LogRecord& record) {
        planner.Consume(record, &actions);
        actions.clear();
        return true;
      },
      &stats);
  if (!read.ok()) return read;
  planner.Finish(&actions);
  if (planner.streams().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "log dir '", dir.string(), "' holds no agent stream (", stats.records, " records in ",
        stats.segments, " segments, none opening a stream); nothing to replay"));
  }
  return planner;
}

absl::StatusOr<LogReplayer::Summary> LogReplayer::Run(const Options& options) {
  auto new_id = options.new_instance_id ? options.new_instance_id : RandomInstanceId;
  ReplayPlanner::Options plan_options{options.as_job, new_id, options.job_token};
  absl::StatusOr<ReplayPlanner> plan = PlanLog(options.log_dir, plan_options);
  if (!plan.ok()) return plan.status();

  Summary summary;
  summary.streams = plan->streams().size();
  summary.batches_planned = plan->total_batches();
  summary.job_id = plan->streams().front().hello.job_id();

  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxMessageBytes);
  arguments.SetMaxSendMessageSize(kMaxMessageBytes);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      options.collector, options.security.ChannelCredentials(&arguments), arguments);
  std::unique_ptr<trainscope::v1::AgentService::Stub> stub =
      trainscope::v1::AgentService::NewStub(channel);

  ReplayState state;
  std::atomic<uint64_t> batches_sent{0};
  std::atomic<uint64_t> events_sent{0};
  base::Notification done;
  std::vector<std::string> watchdog_errors;  // written by the progress thread until joined
  std::thread progress([&] {
    while (!done.WaitForNotificationWithTimeout(absl::Seconds(1))) {
      for (std::string& label : state.CancelStalled(options.timeout)) {
        watchdog_errors.push_back(absl::StrCat(label, ": no word from the collector for ",
                                               absl::FormatDuration(options.timeout),
                                               "; cancelled"));
      }
      if (options.progress == nullptr) continue;
      Summary now;
      state.Totals(&now);
      *options.progress << "replay: " << state.size() << "/" << summary.streams
                        << " streams opened, " << FormatCount(batches_sent.load()) << "/"
                        << FormatCount(summary.batches_planned) << " batches sent ("
                        << FormatCount(events_sent.load()) << " events), "
                        << FormatCount(now.batches_acked) << " acknowledged, "
                        << FormatCount(now.batches_rejected) << " rejected" << std::endl;
    }
  });

  // Second pass: send. A fresh planner with the real instance ids.
  ReplayPlanner sender(plan_options);
  std::vector<bool> failed;
  std::optional<absl::Status> fatal;
  absl::Time first_wall;
  int64_t first_original_ns = 0;
  bool pacing_started = false;
  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };

  auto run_action = [&](const ReplayAction& action) -> bool {
    if (action.kind == ReplayAction::kOpen) {
      const PlannedStream& planned = sender.streams()[action.stream];
      auto stream = std::make_unique<ReplayStream>(stub.get(), absl::StrCat("rank ", planned.rank),
                                                   options.stop);
      ReplayStream* raw = stream.get();
      state.Add(std::move(stream));
      failed.push_back(false);
      absl::Status status = raw->Open(action.message.hello(), options.timeout);
      if (status.ok()) {
        if (summary.generated_token.empty()) summary.generated_token = raw->generated_token();
        return true;
      }
      failed[action.stream] = true;
      if (absl::IsCancelled(status)) return false;
      const bool connected = channel->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
      if (!connected && (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status))) {
        fatal = absl::UnavailableError(client::CannotReachCollectorMessage(options.collector));
        return false;
      }
      summary.errors.push_back(std::string(status.message()));
      return true;
    }
    ReplayStream* stream = state.Get(action.stream);
    if (stream == nullptr || failed[action.stream]) return true;
    if (action.kind == ReplayAction::kBatch) {
      if (options.speed > 0) {
        if (!pacing_started) {
          pacing_started = true;
          first_wall = absl::Now();
          first_original_ns = action.original_unix_ns;
        }
        const double offset_ns =
            static_cast<double>(action.original_unix_ns - first_original_ns) / options.speed;
        if (offset_ns > 0) SleepUntil(first_wall + absl::Nanoseconds(offset_ns), options.stop);
        if (stopped()) return false;
      }
      absl::Status status =
          stream->Send(action.message.batch(), options.max_unsettled_per_stream, options.timeout);
      if (!status.ok()) {
        if (absl::IsCancelled(status) && stopped()) return false;
        failed[action.stream] = true;
        summary.errors.push_back(std::string(status.message()));
        stream->Cancel();
        return true;
      }
      batches_sent.fetch_add(1);
      events_sent.fetch_add(static_cast<uint64_t>(action.message.batch().kind_size()));
      if (stream->halt_reason().has_value()) return false;  // someone halted the replay
      return true;
    }
    absl::Status status = stream->Close(action.message.goodbye(), options.timeout);
    if (!status.ok()) {
      if (absl::IsCancelled(status) && stopped()) return false;
      summary.errors.push_back(std::string(status.message()));
    }
    return true;
  };

  absl::StatusOr<collector::LogReader> reader = collector::LogReader::Open(options.log_dir);
  absl::Status read_status = reader.status();
  bool keep_going = true;
  if (reader.ok()) {
    std::vector<ReplayAction> actions;
    collector::ReadStats stats;
    read_status = reader->ForEach(
        [&](const trainscope::v1::LogRecord& record) {
          sender.Consume(record, &actions);
          for (const ReplayAction& action : actions) {
            if (stopped() || !run_action(action)) {
              keep_going = false;
              break;
            }
          }
          actions.clear();
          return keep_going;
        },
        &stats);
    if (read_status.ok() && keep_going) {
      sender.Finish(&actions);
      for (const ReplayAction& action : actions) {
        if (stopped() || !run_action(action)) break;
      }
    }
  }
  summary.interrupted = stopped();
  if (!keep_going || summary.interrupted) state.CancelAll();

  done.Notify();
  progress.join();
  summary.batches_sent = batches_sent.load();
  summary.events_sent = events_sent.load();
  state.Totals(&summary);
  state.Collect(&summary);
  for (std::string& error : watchdog_errors) summary.errors.push_back(std::move(error));
  state.Clear();  // joins every reader thread
  if (fatal.has_value()) return *fatal;
  if (!read_status.ok()) summary.errors.push_back(std::string(read_status.message()));
  return summary;
}

}  // namespace trainscope::cli
