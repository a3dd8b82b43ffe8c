#include "trainscope/viewer/stored_job_loader.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/offline/stored_job_analysis.h"
#include "trainscope/collector/store/job_state_rule.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/viewer/proto_convert.h"

namespace trainscope::viewer {

absl::StatusOr<JobData> LoadStoredJob(const std::filesystem::path& data_dir,
                                      const std::string& job_id, const StoredJobOptions& options) {
  collector::JobAnalyzerOptions analyzer_options;
  // The whole job: the analysis keeps the newest whole steps that fit (it
  // evicts the oldest, on every rank alike). A range: hold as much as by
  // default, so that old steps are still there to query.
  analyzer_options.max_stored_operators =
      options.steps.has_value()
          ? std::max<uint64_t>(analyzer_options.max_stored_operators, options.max_operators)
          : options.max_operators;
  collector::JobLogState log_state;
  absl::StatusOr<std::unique_ptr<collector::JobAnalyzer>> analyzer =
      collector::AnalyzeStoredJob(data_dir, job_id, analyzer_options, {}, &log_state);
  if (!analyzer.ok()) return analyzer.status();
  JobData data;
  data.job.job_id = job_id;
  // The collector's own rule over the log (a halt issued wins, as it did
  // live), never a state of the viewer's choosing.
  data.job.state = ConvertJobState(collector::StoredJobState(log_state));
  const std::map<uint32_t, std::string>& racks = (*analyzer)->racks();
  for (const auto& [rank, host] : (*analyzer)->hosts()) {
    const auto rack = racks.find(rank);
    data.job.ranks.push_back({rank, host, 0, false, 0, rack == racks.end() ? "" : rack->second});
  }
  data.job.world_size = static_cast<uint32_t>(data.job.ranks.size());
  for (const auto& report : (*analyzer)->Steps(trainscope::v1::StepQuery())) {
    data.steps.push_back(ConvertStep(report));
  }
  std::sort(data.steps.begin(), data.steps.end(),
            [](const auto& a, const auto& b) { return a.step < b.step; });
  std::optional<std::pair<uint64_t, uint64_t>> job_steps;
  if (!data.steps.empty()) job_steps = {data.steps.front().step, data.steps.back().step};
  if (options.steps.has_value()) {
    // Not a structured binding: clang 14 (the thread-safety build) cannot capture one.
    const auto first = options.steps->first;
    const auto last = options.steps->second;
    std::erase_if(data.steps, [&](const StepRecord& s) { return s.step < first || s.step > last; });
    if (data.steps.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "--steps ", first, "-", last, ": job ", job_id, " has none of these steps",
          job_steps.has_value()
              ? absl::StrCat(" (its steps are ", job_steps->first, "-", job_steps->second, ")")
              : std::string(" (it has no steps)")));
    }
  }
  if (options.max_steps != 0 && data.steps.size() > options.max_steps) {
    data.steps.erase(data.steps.begin(), data.steps.end() - options.max_steps);
  }
  data.devices = DevicesOf(data.steps, data.job.ranks);
  trainscope::v1::MareyQuery query;
  const bool ranged = options.steps.has_value() || options.max_steps != 0;
  if (!data.steps.empty() && ranged) {
    query.set_start_ns(data.steps.front().start_ns);
    query.set_end_ns(data.steps.back().end_ns);
  }
  query.set_bins(0);
  query.set_max_operators(options.max_operators);
  const trainscope::v1::MareyView view = (*analyzer)->Marey(query);
  data.operators = ConvertOperators(view.operators());
  // What was left out, said with the numbers (never silently).
  {
    const collector::JobAnalyzerStats stats = (*analyzer)->stats();
    const uint64_t loaded = data.operators.operators.size();
    std::optional<uint64_t> total = loaded;
    if (!ranged) {
      total = std::max<uint64_t>(stats.operators, loaded);
    } else if (view.truncated()) {
      total.reset();  // more in the range than were loaded
    }
    std::optional<std::pair<uint64_t, uint64_t>> loaded_steps;
    for (const OperatorRecord& op : data.operators.operators) {
      if (!loaded_steps.has_value()) loaded_steps = {op.step, op.step};
      loaded_steps->first = std::min(loaded_steps->first, op.step);
      loaded_steps->second = std::max(loaded_steps->second, op.step);
    }
    data.coverage = OperatorCoverage(total, loaded, options.max_operators, job_steps, loaded_steps,
                                     options.steps);
  }
  // Loss contribution: the list and every listed item's snapshots, so that
  // the window switches items offline (at most top_n x 64 snapshots, the
  // collector's bound per item).
  trainscope::v1::SnapshotRequest loss_request;
  loss_request.mutable_loss();
  data.loss = ConvertLossAnswer((*analyzer)->Answer(loss_request).loss(), std::nullopt);
  for (const DifficultItemRecord& item : data.loss.state->items) {
    loss_request.mutable_loss()->set_want_item(true);
    loss_request.mutable_loss()->set_item(item.item);
    LossData answer = ConvertLossAnswer((*analyzer)->Answer(loss_request).loss(), item.item);
    data.loss.snapshots[item.item] = std::move(answer.snapshots[item.item]);
  }
  // The alerts the live collector raised and cleared, from the data dir's
  // index (none when the job ran without one), a clear after its raise: the
  // alerts list closes each raise's row with its clear, as it does live.
  const std::filesystem::path index_path = data_dir / "index.sqlite";
  if (std::filesystem::exists(index_path)) {
    if (auto index = collector::LogIndex::Open(index_path); index.ok()) {
      if (auto alerts = (*index)->ListAlerts(job_id, {}); alerts.ok()) {
        for (const auto& alert : *alerts) data.alerts.push_back(ConvertAlert(alert));
      }
    }
  }
  return data;
}

}  // namespace trainscope::viewer
