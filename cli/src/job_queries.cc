#include "job_queries.h"

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::cli {

namespace v1 = trainscope::v1;

absl::StatusOr<v1::FeedSnapshot> AskAnalysis(const std::optional<std::string>& data_dir,
                                             const ConnectionOptions& conn,
                                             v1::SnapshotRequest request) {
  if (data_dir) {
    absl::StatusOr<std::unique_ptr<collector::JobAnalyzer>> analyzer =
        collector::AnalyzeStoredJob(*data_dir, request.job_id());
    if (!analyzer.ok()) return analyzer.status();
    return (*analyzer)->Answer(request);
  }
  ZmqFeedSource source(conn.feed, conn.snapshot, nullptr);
  absl::StatusOr<v1::FeedSnapshot> reply = source.Request(request, conn.timeout);
  if (reply.ok() && !reply->error().empty()) {
    return absl::FailedPreconditionError(reply->error());
  }
  return reply;
}

absl::StatusOr<std::vector<v1::Alert>> AskLiveAlerts(ZmqFeedSource& source, const std::string& job,
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

}  // namespace trainscope::cli
