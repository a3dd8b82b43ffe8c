#include "trainscope/viewer/snapshot_query_client.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "trainscope/viewer/proto_convert.h"

namespace trainscope::viewer {

SnapshotQueryClient::SnapshotQueryClient(std::string endpoint, const std::atomic<bool>* stop,
                                         client::ClientSecurity security)
    : snapshots_(std::move(endpoint), stop, std::move(security)) {}

absl::StatusOr<trainscope::v1::FeedSnapshot> SnapshotQueryClient::Request(
    const trainscope::v1::SnapshotRequest& request, absl::Duration timeout) {
  return snapshots_.Request(request, timeout);
}

absl::StatusOr<JobData> SnapshotQueryClient::FetchHistory(const std::string& job_id,
                                                          const HistoryOptions& options) {
  // First the newest steps (paging forward: a query answers at most the
  // collector's cap, from its first step on), then the operators of exactly
  // their time range.
  JobData data;
  std::vector<StepRecord> all;
  uint64_t first_step = 0;
  for (int page = 0; page < 10'000; ++page) {
    trainscope::v1::SnapshotRequest steps_request;
    steps_request.set_job_id(job_id);
    steps_request.mutable_steps()->set_first_step(first_step);
    if (page == 0) steps_request.mutable_alerts();  // every alert raised so far
    absl::StatusOr<trainscope::v1::FeedSnapshot> steps = Request(steps_request, options.timeout);
    if (!steps.ok()) return steps.status();
    if (!steps->error().empty()) {
      return absl::NotFoundError(absl::StrCat("the collector at ", snapshots_.endpoint(),
                                              " says: ", steps->error(), " (job '", job_id, "')"));
    }
    if (page == 0) {
      for (const auto& job : steps->jobs()) {
        if (job.summary().job_id() == job_id) data.job = ConvertJob(job);
      }
      for (const auto& alert : steps->alerts()) {
        if (alert.state() == trainscope::v1::ALERT_STATE_RAISED) {
          data.alerts.push_back(ConvertAlert(alert));
        }
      }
    }
    uint64_t newest = 0;
    for (const auto& report : steps->steps()) {
      all.push_back(ConvertStep(report));
      newest = std::max<uint64_t>(newest, report.step());
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
    if (all.size() > options.steps) all.erase(all.begin(), all.end() - options.steps);
    if (steps->steps().empty() || newest < first_step) break;
    first_step = newest + 1;
  }
  if (data.job.job_id.empty()) data.job.job_id = job_id;
  data.steps = std::move(all);
  data.devices = DevicesOf(data.steps, data.job.ranks);
  if (data.steps.empty()) return data;

  trainscope::v1::SnapshotRequest marey_request;
  marey_request.set_job_id(job_id);
  auto* query = marey_request.mutable_marey();
  query->set_start_ns(data.steps.front().start_ns);
  query->set_end_ns(data.steps.back().end_ns);
  query->set_bins(0);  // raw operators: the viewer bins them per zoom level
  query->set_max_operators(options.max_operators);
  absl::StatusOr<trainscope::v1::FeedSnapshot> marey = Request(marey_request, options.timeout);
  if (!marey.ok()) return marey.status();
  if (!marey->error().empty()) {
    return absl::InternalError(absl::StrCat("Marey query refused: ", marey->error()));
  }
  data.operators = ConvertOperators(marey->marey().operators());
  return data;
}

absl::StatusOr<LossData> SnapshotQueryClient::FetchLoss(const std::string& job_id,
                                                        std::optional<uint64_t> item,
                                                        absl::Duration timeout) {
  auto ask = [&](std::optional<uint64_t> wanted) -> absl::StatusOr<LossData> {
    trainscope::v1::SnapshotRequest request;
    request.set_job_id(job_id);
    request.mutable_loss()->set_want_item(wanted.has_value());
    request.mutable_loss()->set_item(wanted.value_or(0));
    absl::StatusOr<trainscope::v1::FeedSnapshot> reply = Request(request, timeout);
    if (!reply.ok()) return reply.status();
    if (!reply->error().empty()) {
      return absl::NotFoundError(absl::StrCat("the collector at ", snapshots_.endpoint(),
                                              " says: ", reply->error(), " (job '", job_id, "')"));
    }
    return ConvertLossAnswer(reply->loss(), wanted);
  };
  absl::StatusOr<LossData> loss = ask(item);
  if (!loss.ok() || item.has_value() || !loss->state.has_value() || loss->state->items.empty()) {
    return loss;
  }
  // The list is sorted: its first item is the one the views show by default.
  return ask(loss->state->items.front().item);
}

}  // namespace trainscope::viewer
