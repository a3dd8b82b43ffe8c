// One job's analysis: decodes the job's event streams, aligns the devices'
// clocks (ClockAligner), assembles steps across devices (StepAssembler) and
// keeps the aligned operators for Marey queries (OperatorStore).
//
// Usage (live, from the job's pipeline, through AnalysisWorker):
//   JobAnalyzer analyzer(options, {.on_step = ..., .on_clocks = ...});
//   analyzer.OnStreamOpened(hello, now_unix_ns);
//   analyzer.OnBatch(rank, batch, now_unix_ns);
//   analyzer.OnProbe(probe_sample);
//   analyzer.Tick(now_unix_ns);
// Usage (offline, a stored log: viewer, export, report): AnalyzeStoredJob in
// trainscope/collector/offline/stored_job_analysis.h, then
//   std::vector<v1::StepReport> steps = analyzer->Steps({});
//   v1::MareyView view = analyzer->Marey(query);
//
// Threading: not thread-safe; one thread owns an instance. Outputs are called
// on that thread, from inside the call that caused them.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_ANALYZER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_ANALYZER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/analysis.pb.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

struct JobAnalyzerOptions {
  // A device with no event for this long no longer holds back closing steps.
  int64_t silent_after_ns = 10'000'000'000;
  uint64_t max_open_steps = 64;               // older open steps are force-closed
  uint64_t max_stored_operators = 4'000'000;  // for Marey queries; oldest steps go first
  uint64_t max_steps_kept = 100'000;          // StepReports kept for queries
  uint32_t default_max_operators = 200'000;   // MareyQuery.max_operators == 0
  // Publish a ClockReport at most this often (collector time).
  int64_t clock_report_interval_ns = 1'000'000'000;
  // Each step's per-pair traffic (StepReport.traffic, TrafficModel).
  bool traffic = true;
  // The budget of distinct operator/group names (JobStrings): past it names
  // read as JobStrings::kOverBudgetName, counted in stats().names_over_budget.
  JobStringsOptions strings;
};

// What a loss-contribution report (or a rank's departure) changed.
struct LossOutput {
  std::optional<trainscope::v1::LossState> state;  // set when the job-wide list changed
  std::vector<trainscope::v1::ItemSnapshot> snapshots;
  std::vector<LossTracker::ClosedEpoch> closed;     // for the difficult_item rule
};

struct JobAnalyzerOutputs {
  // A step closed: its metrics and its aligned operators.
  std::function<void(trainscope::v1::StepReport, trainscope::v1::OperatorBatch)> on_step;
  std::function<void(trainscope::v1::ClockReport)> on_clocks;
  // Asked at each step close: false leaves on_step's OperatorBatch empty.
  // Building it is a proto per operator, so a live feed nobody subscribes
  // to should not pay for it. Null: always built.
  std::function<bool()> operators_wanted;
  std::function<void(LossOutput)> on_loss;
};

// Counters for status and benchmarks.
struct JobAnalyzerStats {
  uint64_t events = 0;
  uint64_t operators = 0;
  uint64_t steps_closed = 0;
  uint64_t steps_forced = 0;  // closed early by max_open_steps
  uint64_t operators_evicted = 0;
  uint64_t operators_held = 0;     // in the operator store now (Marey queries)
  uint64_t names = 0;              // distinct names interned (JobStrings)
  uint64_t name_bytes = 0;
  uint64_t names_over_budget = 0;  // names mapped to JobStrings::kOverBudgetName
  bool released = false;           // Release() ran: operators and scratch freed
};

class JobAnalyzer {
 public:
  JobAnalyzer(JobAnalyzerOptions options, JobAnalyzerOutputs outputs);
  ~JobAnalyzer();

  JobAnalyzer(const JobAnalyzer&) = delete;
  JobAnalyzer& operator=(const JobAnalyzer&) = delete;

  // One durable log record (stream opened/closed, batch, probe); the rest is
  // ignored. Times come from the record's logged_unix_ns.
  void OnLogRecord(const trainscope::v1::LogRecord& record);
  void OnStreamOpened(const trainscope::v1::Hello& hello, int64_t now_unix_ns);
  void OnBatch(uint32_t rank, const trainscope::v1::EventBatch& batch, int64_t now_unix_ns);
  void OnProbe(const trainscope::v1::ProbeSample& sample);
  void OnStreamClosed(uint32_t rank, int64_t now_unix_ns);
  // Closes steps held back by silent devices; publishes clock reports.
  void Tick(int64_t now_unix_ns);
  // The streams are over (end of a stored log): closes every open step.
  void Finish();
  // The job is over and its final reports are out: closes every open step
  // (as Finish), then frees what only a running job needs (the operator
  // store, the assembler's and decoder's buffers). Steps, clocks, loss and
  // hosts stay for queries; Marey answers from what is held, which is
  // nothing until the job sends operators again (a restart). May run again.
  void Release();

  // Queries over what has been analysed so far.
  std::vector<trainscope::v1::StepReport> Steps(const trainscope::v1::StepQuery& query) const;
  trainscope::v1::MareyView Marey(const trainscope::v1::MareyQuery& query) const;
  trainscope::v1::ClockReport Clocks() const;
  // Answers request.steps, request.marey and request.loss, with the current clocks, in a
  // FeedSnapshot holding only those fields (what the snapshot server adds).
  trainscope::v1::FeedSnapshot Answer(const trainscope::v1::SnapshotRequest& request) const;
  // Host of each rank, as the ranks said in Hello.
  const std::map<uint32_t, std::string>& hosts() const;
  // Rack of each rank that named one in Hello (Hello.rack); absent: unknown.
  const std::map<uint32_t, std::string>& racks() const;
  JobAnalyzerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_ANALYZER_H_
