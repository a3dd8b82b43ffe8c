#include "trainscope/collector/analysis/job_analyzer.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/clock_aligner.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/collector/analysis/marey_aggregator.h"
#include "trainscope/collector/analysis/operator_batch_builder.h"
#include "trainscope/collector/analysis/operator_store.h"
#include "trainscope/collector/analysis/step_assembler.h"
#include "trainscope/collector/analysis/traffic_model.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::collector {

namespace v1 = trainscope::v1;

class JobAnalyzer::Impl {
 public:
  Impl(JobAnalyzerOptions options, JobAnalyzerOutputs outputs);

  void OnStreamOpened(const v1::Hello& hello, int64_t now_unix_ns);
  void OnBatch(uint32_t rank, const v1::EventBatch& batch, int64_t now_unix_ns);
  void OnProbe(const v1::ProbeSample& sample);
  void OnStreamClosed(uint32_t rank, int64_t now_unix_ns);
  void Tick(int64_t now_unix_ns);
  void Finish();
  void Release();

  std::vector<v1::StepReport> Steps(const v1::StepQuery& query) const;
  v1::MareyView Marey(const v1::MareyQuery& query) const;
  v1::ClockReport Clocks() const { return aligner_.Report(); }
  v1::LossAnswer Loss(const v1::LossQuery& query) const { return loss_.Answer(query); }
  const std::map<uint32_t, std::string>& hosts() const { return hosts_; }
  const std::map<uint32_t, std::string>& racks() const { return racks_; }
  JobAnalyzerStats stats() const;

 private:
  void OnStepClosed(ClosedStep&& closed);
  void MaybeReportClocks(int64_t now_unix_ns, bool force);
  void EmitLoss(LossTracker::Changes changes);
  // Where each end of the report's traffic lives (Hello.host, Hello.device).
  void PlaceTraffic(v1::StepReport& report) const;

  const JobAnalyzerOptions options_;
  const JobAnalyzerOutputs outputs_;
  JobStrings strings_{options_.strings};
  GroupDirectory groups_{&strings_};
  ClockAligner aligner_;
  TrafficModel traffic_;
  std::unique_ptr<OperatorStore> store_;  // never null; Release() swaps in an empty one
  StepAssembler assembler_;
  std::unique_ptr<MareyAggregator> marey_;
  LossTracker loss_;
  std::map<uint32_t, std::string> hosts_;
  std::map<uint32_t, std::string> racks_;    // Hello.rack by rank, only those that said one
  std::map<uint32_t, std::string> devices_;  // Hello.device by rank
  std::deque<v1::StepReport> steps_;         // by step number, bounded by max_steps_kept
  std::vector<uint32_t> batch_ids_;          // scratch: a batch's string index -> JobStrings id
  std::vector<DeviceEvent> batch_events_;    // scratch: a batch's decoded events
  JobAnalyzerStats stats_;
  int64_t next_clock_report_ns_ = 0;
  bool released_ = false;
};

JobAnalyzer::Impl::Impl(JobAnalyzerOptions options, JobAnalyzerOutputs outputs)
    : options_(options),
      outputs_(std::move(outputs)),
      aligner_(&groups_),
      store_(std::make_unique<OperatorStore>(
          OperatorStoreOptions{.max_operators = options.max_stored_operators})),
      assembler_(&strings_, &groups_, &aligner_,
                 StepAssemblerOptions{.silent_after_ns = options.silent_after_ns,
                                      .max_open_steps = options.max_open_steps,
                                      .traffic_model = options.traffic ? &traffic_ : nullptr},
                 [this](ClosedStep&& closed) { OnStepClosed(std::move(closed)); }),
      marey_(std::make_unique<MareyAggregator>(store_.get(), &strings_)) {}

void JobAnalyzer::Impl::OnStreamOpened(const v1::Hello& hello, int64_t now_unix_ns) {
  if (hello.world_size() > groups_.world_size()) groups_.set_world_size(hello.world_size());
  hosts_[hello.rank()] = hello.host();
  if (!hello.rack().empty()) {
    racks_[hello.rank()] = hello.rack();
  } else {
    racks_.erase(hello.rank());
  }
  devices_[hello.rank()] = hello.device();
  traffic_.SetRankBackend(hello.rank(), hello.gpus_size() > 0
                                            ? TrafficModel::Backend::kNccl
                                            : TrafficModel::BackendOfDevice(hello.device()));
  // The agent's own wall-clock reading is the prior until probes and
  // collectives say better.
  if (hello.clock_domains_size() > 0) {
    const v1::ClockDomain& clock = hello.clock_domains(0);
    // Ranks naming the same physical clock share one offset (older agents
    // and imported traces name none: each is fitted on its own).
    aligner_.SetClockDomain(hello.rank(), clock.domain_id().empty()
                                              ? std::string()
                                              : absl::StrCat(clock.name(), "@", clock.domain_id()));
    aligner_.SetNominalOffset(hello.rank(), clock.realtime_minus_domain_ns());
  }
  assembler_.ExpectDevices(hello.world_size());
  if (hello.gpus_size() > 0) assembler_.ExpectGpu(hello.rank());
  assembler_.OnDeviceOpened(hello.rank());
  loss_.OnRankJoined(hello.rank());
}

void JobAnalyzer::Impl::EmitLoss(LossTracker::Changes changes) {
  if (!outputs_.on_loss || (!changes.state_changed && changes.snapshots.empty())) return;
  LossOutput out;
  if (changes.state_changed) out.state = loss_.State();
  out.snapshots = std::move(changes.snapshots);
  out.closed = std::move(changes.closed);
  outputs_.on_loss(std::move(out));
}

void JobAnalyzer::Impl::OnBatch(uint32_t rank, const v1::EventBatch& batch, int64_t now_unix_ns) {
  for (const v1::LossReport& report : batch.loss_reports()) EmitLoss(loss_.OnReport(rank, report));
  // The collector validated the columns (BatchValidator); a stored log from
  // elsewhere is checked again so that it cannot crash us: a batch whose
  // columns disagree is skipped whole.
  if (!protocol::CheckEventBatchColumns(batch).ok()) return;
  batch_ids_.resize(static_cast<size_t>(batch.strings_size()));
  for (int i = 0; i < batch.strings_size(); ++i) batch_ids_[i] = strings_.Intern(batch.strings(i));
  auto id_of = [this](uint32_t index) {
    return index < batch_ids_.size() ? batch_ids_[index] : 0u;
  };
  const int n = batch.kind_size();
  int collective = 0;
  int gpu = 0;
  int64_t start = batch.base_time_ns();
  // Decoded events go to the assembler in runs: one device lookup per run.
  // A run ends before each collective, so that the aligner has seen exactly
  // the events before it whenever the assembler closes a step.
  std::vector<DeviceEvent>& run = batch_events_;
  run.resize(static_cast<size_t>(n));
  size_t run_begin = 0;
  for (int i = 0; i < n; ++i) {
    DeviceEvent& e = run[static_cast<size_t>(i)];
    start += batch.start_delta_ns(i);
    e.start_ns = start;
    e.end_ns = start + static_cast<int64_t>(batch.duration_ns(i));
    e.value = batch.value(i);
    e.name = id_of(batch.name(i));
    e.thread = batch.thread(i);
    e.kind = batch.kind(i);
    e.detail = batch.detail(i);
    e.group = 0;
    e.group_sequence = 0;
    e.peer = -1;
    e.gpu_device = 0;
    e.gpu_stream = 0;
    e.launch_op = 0;
    e.correlation = 0;
    e.launch_ns = 0;
    if (e.IsGpu()) {
      e.gpu_device = batch.gpu_device(gpu);
      e.gpu_stream = batch.gpu_stream(gpu);
      e.correlation = batch.gpu_correlation(gpu);
      if (e.correlation != 0) {
        e.launch_ns = start + batch.gpu_launch_delta_ns(gpu);
        e.launch_op = id_of(batch.gpu_launch_op(gpu));
      }
      ++gpu;
    }
    if (e.IsCollective()) {
      e.group = id_of(batch.group(collective));
      e.group_sequence = batch.group_sequence(collective);
      e.peer = batch.peer(collective);
      ++collective;
      assembler_.Add(
          rank, absl::MakeConstSpan(run.data() + run_begin, static_cast<size_t>(i) - run_begin));
      run_begin = static_cast<size_t>(i);
      groups_.NoteUse(e.group, rank);
      aligner_.Add(rank, e);
    }
  }
  assembler_.Add(rank,
                 absl::MakeConstSpan(run.data() + run_begin, static_cast<size_t>(n) - run_begin));
  stats_.events += static_cast<uint64_t>(n);
  assembler_.OnBatchEnd(rank);
}

void JobAnalyzer::Impl::OnProbe(const v1::ProbeSample& sample) {
  aligner_.AddProbe(sample.rank(), sample.collector_send_unix_ns(),
                    sample.reply().agent_receive_ns(), sample.reply().agent_send_ns(),
                    sample.collector_receive_unix_ns());
}

void JobAnalyzer::Impl::OnStreamClosed(uint32_t rank, int64_t now_unix_ns) {
  aligner_.OnDeviceClosed(rank);
  assembler_.OnDeviceClosed(rank);
  EmitLoss(loss_.OnRankGone(rank));
}

void JobAnalyzer::Impl::Tick(int64_t now_unix_ns) {
  assembler_.Tick(now_unix_ns);
  MaybeReportClocks(now_unix_ns, /*force=*/false);
}

void JobAnalyzer::Impl::Finish() {
  assembler_.Flush();
  MaybeReportClocks(0, /*force=*/true);
}

void JobAnalyzer::Impl::Release() {
  Finish();
  // Not skipped when already released: a job that came back (a restart)
  // and finished again has filled a store since.
  released_ = true;
  // The operators are what a job holds most of (max_stored_operators of
  // them); a fresh store holds none. The aggregator points at the store, so
  // it follows.
  store_ = std::make_unique<OperatorStore>(
      OperatorStoreOptions{.max_operators = options_.max_stored_operators});
  marey_ = std::make_unique<MareyAggregator>(store_.get(), &strings_);
  std::vector<uint32_t>().swap(batch_ids_);
  std::vector<DeviceEvent>().swap(batch_events_);
  steps_.shrink_to_fit();
}

void JobAnalyzer::Impl::MaybeReportClocks(int64_t now_unix_ns, bool force) {
  if (!outputs_.on_clocks) return;
  if (!force && now_unix_ns < next_clock_report_ns_) return;
  next_clock_report_ns_ = now_unix_ns + options_.clock_report_interval_ns;
  v1::ClockReport report = aligner_.Report();
  for (v1::ClockJump& jump : aligner_.TakeJumps()) *report.add_jumps() = std::move(jump);
  if (report.devices_size() > 0) outputs_.on_clocks(std::move(report));
}

void JobAnalyzer::Impl::OnStepClosed(ClosedStep&& closed) {
  ++stats_.steps_closed;
  stats_.operators += closed.operators.size();
  v1::OperatorBatch operators;
  if (outputs_.on_step && (!outputs_.operators_wanted || outputs_.operators_wanted())) {
    operators.mutable_operators()->Reserve(static_cast<int>(closed.operators.size()));
    OperatorBatchBuilder builder(&strings_, &operators);
    for (const OperatorRecord& op : closed.operators) builder.Add(op);
  }
  store_->Insert(std::move(closed.operators));
  // An evicted step's memory serves the next step: no fresh pages per step.
  assembler_.Recycle(store_->TakeEvictedStorage());
  v1::StepReport& report = closed.report;
  PlaceTraffic(report);
  // Steps normally close in order; a late one (forced early) is put in place.
  auto it =
      std::upper_bound(steps_.begin(), steps_.end(), report.step(),
                       [](uint64_t step, const v1::StepReport& r) { return step < r.step(); });
  steps_.insert(it, report);
  while (steps_.size() > options_.max_steps_kept) steps_.pop_front();
  if (outputs_.on_step) outputs_.on_step(std::move(report), std::move(operators));
}

void JobAnalyzer::Impl::PlaceTraffic(v1::StepReport& report) const {
  auto find = [](const std::map<uint32_t, std::string>& m, uint32_t rank) -> const std::string& {
    static const std::string* const kNone = new std::string();
    auto it = m.find(rank);
    return it == m.end() ? *kNone : it->second;
  };
  for (v1::PairTraffic& p : *report.mutable_traffic()) {
    const std::string& src_host = find(hosts_, p.src_rank());
    const std::string& dst_host = find(hosts_, p.dst_rank());
    p.set_src_host(src_host);
    p.set_dst_host(dst_host);
    p.set_locality(TrafficModel::Locality(src_host, find(devices_, p.src_rank()), dst_host,
                                          find(devices_, p.dst_rank())));
  }
}

std::vector<v1::StepReport> JobAnalyzer::Impl::Steps(const v1::StepQuery& query) const {
  constexpr uint32_t kDefaultMaxSteps = 10'000;
  const uint32_t max = query.max_steps() == 0 ? kDefaultMaxSteps : query.max_steps();
  std::vector<v1::StepReport> out;
  auto it =
      std::lower_bound(steps_.begin(), steps_.end(), query.first_step(),
                       [](const v1::StepReport& r, uint64_t step) { return r.step() < step; });
  for (; it != steps_.end() && out.size() < max; ++it) {
    if (query.last_step() != 0 && it->step() > query.last_step()) break;
    out.push_back(*it);
  }
  return out;
}

v1::MareyView JobAnalyzer::Impl::Marey(const v1::MareyQuery& query) const {
  v1::MareyQuery q = query;
  if (q.max_operators() == 0) q.set_max_operators(options_.default_max_operators);
  return marey_->Build(q, hosts_);
}

JobAnalyzerStats JobAnalyzer::Impl::stats() const {
  JobAnalyzerStats s = stats_;
  s.steps_forced = assembler_.stats().steps_forced;
  const OperatorStoreStats store = store_->stats();
  s.operators_evicted = store.evicted_operators;
  s.operators_held = store.operators;
  s.names = strings_.names();
  s.name_bytes = strings_.bytes();
  s.names_over_budget = strings_.over_budget();
  s.released = released_;
  return s;
}

// ---------------------------------------------------------------- facade

JobAnalyzer::JobAnalyzer(JobAnalyzerOptions options, JobAnalyzerOutputs outputs)
    : impl_(std::make_unique<Impl>(options, std::move(outputs))) {}
JobAnalyzer::~JobAnalyzer() = default;

void JobAnalyzer::OnLogRecord(const v1::LogRecord& record) {
  const int64_t at = record.logged_unix_ns();
  switch (record.body_case()) {
    case v1::LogRecord::kStreamOpened:
      impl_->OnStreamOpened(record.stream_opened().hello(), at);
      break;
    case v1::LogRecord::kBatch:
      if (record.batch().refused_reason().empty()) {
        impl_->OnBatch(record.batch().rank(), record.batch().batch(), at);
      }
      break;
    case v1::LogRecord::kStreamClosed:
      impl_->OnStreamClosed(record.stream_closed().rank(), at);
      break;
    case v1::LogRecord::kProbe:
      impl_->OnProbe(record.probe());
      break;
    default:
      break;
  }
}
void JobAnalyzer::OnStreamOpened(const v1::Hello& hello, int64_t now_unix_ns) {
  impl_->OnStreamOpened(hello, now_unix_ns);
}
void JobAnalyzer::OnBatch(uint32_t rank, const v1::EventBatch& batch, int64_t now_unix_ns) {
  impl_->OnBatch(rank, batch, now_unix_ns);
}
void JobAnalyzer::OnProbe(const v1::ProbeSample& sample) { impl_->OnProbe(sample); }
void JobAnalyzer::OnStreamClosed(uint32_t rank, int64_t now_unix_ns) {
  impl_->OnStreamClosed(rank, now_unix_ns);
}
void JobAnalyzer::Tick(int64_t now_unix_ns) { impl_->Tick(now_unix_ns); }
void JobAnalyzer::Finish() { impl_->Finish(); }
void JobAnalyzer::Release() { impl_->Release(); }
std::vector<v1::StepReport> JobAnalyzer::Steps(const v1::StepQuery& query) const {
  return impl_->Steps(query);
}
v1::MareyView JobAnalyzer::Marey(const v1::MareyQuery& query) const { return impl_->Marey(query); }
v1::ClockReport JobAnalyzer::Clocks() const { return impl_->Clocks(); }
v1::FeedSnapshot JobAnalyzer::Answer(const v1::SnapshotRequest& request) const {
  v1::FeedSnapshot reply;
  if (request.has_steps()) {
    for (auto& step : impl_->Steps(request.steps())) *reply.add_steps() = std::move(step);
  }
  if (request.has_marey()) *reply.mutable_marey() = impl_->Marey(request.marey());
  if (request.has_loss()) *reply.mutable_loss() = impl_->Loss(request.loss());
  *reply.mutable_clocks() = impl_->Clocks();
  return reply;
}
const std::map<uint32_t, std::string>& JobAnalyzer::hosts() const { return impl_->hosts(); }
const std::map<uint32_t, std::string>& JobAnalyzer::racks() const { return impl_->racks(); }
JobAnalyzerStats JobAnalyzer::stats() const { return impl_->stats(); }

}  // namespace trainscope::collector
