// Streams a stored job log to a collector again, as agent streams, so the
// collector logs and publishes it like a live job (`trainscope replay`).
//
// Usage:
//   ASSIGN_OR_RETURN(ReplayPlanner plan, LogReplayer::PlanLog(dir, {}));  // no network
//   ASSIGN_OR_RETURN(LogReplayer::Summary summary, LogReplayer::Run(options));
//   exit(summary.ok() ? 0 : 1);
//
// The log is read twice: once to plan (and refuse a log with no stream before
// connecting), once to send, so memory stays bounded by the in-flight window
// (max_unsettled_per_stream batches per stream) whatever the log's size.
// Each stream has a reader thread for acknowledgements; a stream that hears
// nothing for `timeout` while it waits is cancelled, so Run never hangs.
//
// Threading: Run blocks the calling thread; it starts and joins its own threads.
#ifndef TRAINSCOPE_CLI_LOG_REPLAYER_H_
#define TRAINSCOPE_CLI_LOG_REPLAYER_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/cli/replay_planner.h"
#include "trainscope/client/client_security.h"

namespace trainscope::cli {

class LogReplayer {
 public:
  struct Options {
    std::filesystem::path log_dir;
    std::string collector;  // gRPC target
    client::ClientSecurity security;  // TLS towards the collector (as an agent's)
    std::string as_job;     // empty: "<original>-replay"
    std::string job_token;  // empty: the collector generates one
    double speed = 0;       // 0: as fast as acks allow; 1: original pacing; 2: twice as fast
    absl::Duration timeout = absl::Seconds(10);  // per wait for the collector
    uint64_t max_unsettled_per_stream = 64;
    const std::atomic<bool>* stop = nullptr;
    std::ostream* progress = nullptr;           // one line per second; null: silent
    std::function<uint64_t()> new_instance_id;  // null: random
  };

  struct Summary {
    std::string job_id;
    uint64_t streams = 0;
    uint64_t batches_planned = 0;
    uint64_t batches_sent = 0;
    uint64_t events_sent = 0;
    uint64_t batches_acked = 0;
    uint64_t batches_rejected = 0;
    uint64_t batches_unacked = 0;
    bool interrupted = false;
    std::optional<std::string> halted;  // the collector halted the replayed job: the reason
    std::string generated_token;        // set when the collector generated the job's token
    std::vector<std::string> errors;    // stream failures and reject reasons

    bool ok() const {
      return errors.empty() && batches_rejected == 0 && batches_unacked == 0 && !interrupted &&
             !halted.has_value() && batches_sent == batches_planned;
    }
    // "replayed DIR as job J: 4 streams, 120/120 batches sent (1,234 events), 120 acknowledged,
    //  0 rejected, 0 unacknowledged"
    std::string Line(const std::filesystem::path& dir) const;
    std::string Json(const std::filesystem::path& dir) const;
  };

  // Reads the whole log through a planner (nothing is sent). NOT_FOUND or
  // FAILED_PRECONDITION with a message naming `dir` and what a log dir is.
  static absl::StatusOr<ReplayPlanner> PlanLog(const std::filesystem::path& dir,
                                               ReplayPlanner::Options options);

  // UNAVAILABLE when the collector cannot be reached; otherwise a summary
  // (check ok()) of what was sent, acknowledged and refused.
  static absl::StatusOr<Summary> Run(const Options& options);
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_LOG_REPLAYER_H_
