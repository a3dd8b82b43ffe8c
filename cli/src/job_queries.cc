#include "job_queries.h"

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/alert_engine.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/offline/stored_job_analysis.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::cli {

namespace v1 = trainscope::v1;

absl::StatusOr<v1::FeedSnapshot> AskAnalysis(const std::optional<std::string>& data_dir,
                                             const client::ConnectionOptions& conn,
                                             v1::SnapshotRequest request) {
  if (data_dir) {
    absl::StatusOr<std::unique_ptr<collector::JobAnalyzer>> analyzer =
        collector::AnalyzeStoredJob(*data_dir, request.job_id());
    if (!analyzer.ok()) return analyzer.status();
    return (*analyzer)->Answer(request);
  }
  client::ZmqFeedSource source(conn.feed, conn.snapshot, nullptr, conn.security);
  absl::StatusOr<v1::FeedSnapshot> reply = source.Request(request, conn.timeout);
  if (reply.ok() && !reply->error().empty()) {
    return absl::FailedPreconditionError(reply->error());
  }
  return reply;
}

absl::StatusOr<std::vector<v1::Alert>> AskLiveAlerts(client::ZmqFeedSource& source,
                                                     const std::string& job,
                                                     const v1::AlertQuery& query,
                                                     absl::Duration timeout) {
  v1::SnapshotRequest request;
  request.set_job_id(job);
  *request.mutable_alerts() = query;
  absl::StatusOr<v1::FeedSnapshot> reply = source.Request(request, timeout);
  if (!reply.ok()) return reply.status();
  if (!reply->error().empty()) return absl::FailedPreconditionError(reply->error());
  return std::vector<v1::Alert>(reply->alerts().begin(), reply->alerts().end());
}

absl::StatusOr<std::vector<v1::Alert>> AskAlertIndex(const std::string& data_dir,
                                                     const std::string& job,
                                                     const v1::AlertQuery& query) {
  const std::filesystem::path db = std::filesystem::path(data_dir) / "index.sqlite";
  if (!std::filesystem::exists(db)) {
    return absl::NotFoundError(absl::StrCat("no index at ", db.string(), " (is ", data_dir,
                                            " a collector's --data-dir?)"));
  }
  absl::StatusOr<std::unique_ptr<collector::LogIndex>> index = collector::LogIndex::Open(db);
  if (!index.ok()) return index.status();
  return (*index)->ListAlerts(job, query);
}

absl::StatusOr<std::vector<v1::Alert>> EvaluateRules(const std::string& data_dir,
                                                     const std::string& job,
                                                     const std::optional<std::string>& rules_path,
                                                     std::optional<uint32_t> default_warmup_steps) {
  v1::RulesConfig rules;
  if (rules_path) {
    absl::StatusOr<v1::RulesConfig> loaded = collector::LoadRulesFile(*rules_path);
    if (!loaded.ok()) return loaded.status();
    rules = std::move(*loaded);
  }
  if (default_warmup_steps && !rules.has_warmup_steps()) {
    rules.set_warmup_steps(*default_warmup_steps);
  }
  // The rules read steps only: keep no more operators than one step's.
  collector::JobAnalyzerOptions options;
  options.max_stored_operators = 0;
  absl::StatusOr<std::unique_ptr<collector::JobAnalyzer>> analyzer =
      collector::AnalyzeStoredJob(data_dir, job, options);
  if (!analyzer.ok()) return analyzer.status();
  collector::AlertEngine engine(job, std::move(rules));
  std::vector<v1::Alert> alerts;
  v1::StepQuery all;
  all.set_max_steps(UINT32_MAX);
  for (const v1::StepReport& step : (*analyzer)->Steps(all)) {
    for (v1::Alert& alert : engine.OnStep(step, step.end_ns())) alerts.push_back(std::move(alert));
  }
  return alerts;
}

}  // namespace trainscope::cli
