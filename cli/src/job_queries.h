// What the analysis knows of one job, asked the same way by every
// subcommand that reads it: live from the collector's snapshot server, or
// computed from a stored log (--data-dir). Private to the CLI library.
#ifndef TRAINSCOPE_CLI_SRC_JOB_QUERIES_H_
#define TRAINSCOPE_CLI_SRC_JOB_QUERIES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/client/connection_options.h"
#include "trainscope/client/zmq_feed_source.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::cli {

// The analysis's answer to `request` (its job_id set): from the job's
// stored log under `data_dir` when given, else from the live collector.
absl::StatusOr<trainscope::v1::FeedSnapshot> AskAnalysis(const std::optional<std::string>& data_dir,
                                                         const client::ConnectionOptions& conn,
                                                         trainscope::v1::SnapshotRequest request);

// The job's alerts: from the index under `data_dir`, or live.
absl::StatusOr<std::vector<trainscope::v1::Alert>> AskAlertIndex(
    const std::string& data_dir, const std::string& job, const trainscope::v1::AlertQuery& query);
absl::StatusOr<std::vector<trainscope::v1::Alert>> AskLiveAlerts(
    client::ZmqFeedSource& source, const std::string& job, const trainscope::v1::AlertQuery& query,
    absl::Duration timeout);

// Runs the rules (the defaults, or the rules file at `rules_path`) over the
// steps of a stored job log, as the live collector would have.
// `default_warmup_steps`, when set, replaces the default of warmup_steps
// (a rules file that sets it still wins).
absl::StatusOr<std::vector<trainscope::v1::Alert>> EvaluateRules(
    const std::string& data_dir, const std::string& job,
    const std::optional<std::string>& rules_path,
    std::optional<uint32_t> default_warmup_steps = std::nullopt);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_SRC_JOB_QUERIES_H_
