#include "trainscope/collector/analysis/step_assembler.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "trainscope/collector/analysis/operator_pairer.h"
#include "trainscope/collector/analysis/step_report_builder.h"

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

namespace {

// How far back a "flops" counter looks for the operator it belongs to
// (other threads' events may sit in between).
constexpr int kFlopsLookback = 16;

}  // namespace

struct StepAssembler::Device {
  DeviceLiveness liveness;
  bool has_mark = false;
  // Sent something after its latest mark other than what belongs to the
  // step that mark ended (its memory peak, its phases).
  bool past_mark = true;
  bool mark_in_batch = false;            // the latest mark came in the batch now arriving
  uint64_t step = 0;                     // the current step, once has_mark
  DeviceStepBuffer* current = nullptr;   // null: dropping until the next mark
  DeviceStepBuffer* previous = nullptr;  // the step the last mark ended, while open
  uint64_t previous_step = 0;
  int64_t last_mark_raw_ns = std::numeric_limits<int64_t>::min();
  std::unique_ptr<DeviceStepBuffer> prelude;  // events before the first mark
  uint32_t stage = 0;
  size_t last_step_events = 0;  // to reserve the next step's buffer
  OperatorPairer operators;     // OPERATOR_BEGIN awaiting END

  // GPU work. A step of a GPU device waits for the work its launches made.
  GpuWorkProgress gpu;
  // Its open steps by start mark: which step a launch time belongs to. The
  // step before its first mark (the prelude's) starts at int64 min.
  struct Span {
    int64_t start_raw_ns;
    uint64_t step;
    DeviceStepBuffer* buffer;
  };
  std::vector<Span> spans;
};

namespace {

// The time that places an event in a step: a GPU event's launch when known
// (its work belongs to the step that launched it), else its start.
int64_t PlacingTime(const DeviceEvent& e) {
  return e.IsGpu() && e.correlation != 0 ? e.launch_ns : e.start_ns;
}

}  // namespace

StepAssembler::StepAssembler(const JobStrings* strings, GroupDirectory* groups,
                             const ReferenceClock* clock, StepAssemblerOptions options,
                             StepSink sink)
    : strings_(strings),
      options_(options),
      sink_(std::move(sink)),
      matcher_(groups, clock, [this] { return KnownDevices(); }),
      gpu_matcher_(groups, clock, [this] { return KnownDevices(); }),
      summarizer_(clock, &matcher_, &gpu_matcher_, strings) {
  matcher_.EnableTraffic(options_.traffic_model, /*nccl_kernels=*/false);
  gpu_matcher_.EnableTraffic(options_.traffic_model, /*nccl_kernels=*/true);
}

StepAssembler::~StepAssembler() = default;

StepAssembler::Device& StepAssembler::NewDevice(uint32_t rank) {
  if (rank >= devices_.size()) devices_.resize(rank + 1);
  devices_[rank] = std::make_unique<Device>();
  Device& d = *devices_[rank];
  d.prelude = std::make_unique<DeviceStepBuffer>();
  d.current = d.prelude.get();
  return d;
}

void StepAssembler::OnDeviceOpened(uint32_t rank) { DeviceFor(rank).liveness.OnOpened(); }

void StepAssembler::ExpectGpu(uint32_t rank) { DeviceFor(rank).gpu.Expect(); }

void StepAssembler::ExpectDevices(uint32_t world_size) { world_size_wait_.Expect(world_size); }

bool StepAssembler::AwaitingDevices() const { return world_size_wait_.Awaiting(KnownDevices()); }

void StepAssembler::OnDeviceClosed(uint32_t rank) {
  Device& d = DeviceFor(rank);
  d.liveness.OnClosed();
  d.operators.Clear();
  TryClose();
}

void StepAssembler::Add(uint32_t rank, const DeviceEvent& e) { AddTo(rank, DeviceFor(rank), e); }

void StepAssembler::Add(uint32_t rank, absl::Span<const DeviceEvent> events) {
  // Devices are held by pointer: `d` stays valid while steps close.
  Device& d = DeviceFor(rank);
  for (const DeviceEvent& e : events) AddTo(rank, d, e);
}

inline void StepAssembler::AddTo(uint32_t rank, Device& d, const DeviceEvent& e) {
  d.liveness.OnEvent();
  switch (e.kind) {
    case v1::EVENT_KIND_OPERATOR:
      Push(d, e);
      break;
    case v1::EVENT_KIND_COLLECTIVE:
      if (d.current != nullptr && d.current->events.size() < options_.max_events_per_device_step) {
        NoteArrival(rank, d, e);
      }
      Push(d, e);
      break;
    case v1::EVENT_KIND_OPERATOR_BEGIN:
      if (!d.operators.Begin(e)) ++stats_.events_dropped;
      break;
    case v1::EVENT_KIND_OPERATOR_END:
      OnOperatorEnd(d, e);
      break;
    case v1::EVENT_KIND_STEP_MARK:
      OnStepMark(rank, d, e);
      return;
    case v1::EVENT_KIND_PHASE_MARK:
      OnPhase(d, e);
      if (d.has_mark && e.value != d.step) return;  // the ended step's phase
      break;
    case v1::EVENT_KIND_COUNTER:
      OnCounter(d, e);
      if (e.start_ns == d.last_mark_raw_ns) return;  // the ended step's memory peak
      break;
    case v1::EVENT_KIND_GPU_KERNEL:
    case v1::EVENT_KIND_GPU_MEMCPY:
    case v1::EVENT_KIND_GPU_MEMSET:
    case v1::EVENT_KIND_GPU_COLLECTIVE:
      // Device work says nothing of where the host is.
      OnGpuWork(rank, d, e);
      return;
    case v1::EVENT_KIND_GPU_RUNTIME:
      if (e.detail == v1::RUNTIME_CALL_SYNC) OnHostSync(d, e);
      break;
    default:
      return;
  }
  if (!d.past_mark && !batch_boundaries_) [[unlikely]] {
    // The device moved on: the step its latest mark ended is complete.
    d.past_mark = true;
    TryClose();
  }
}

void StepAssembler::OnBatchEnd(uint32_t rank) {
  batch_boundaries_ = true;
  Device& d = DeviceFor(rank);
  if (d.past_mark) return;
  // The agent drains every thread's ring once per batch, so what other
  // threads recorded before the mark is in its batch or the next one.
  if (d.mark_in_batch) {
    d.mark_in_batch = false;
    return;
  }
  d.past_mark = true;
  TryClose();
}

void StepAssembler::Push(Device& d, const DeviceEvent& e) {
  // Threads' rings drain separately: an operator of another thread (gloo's
  // worker, say) may arrive after a mark it precedes; it goes by its time.
  DeviceStepBuffer* b =
      d.previous != nullptr && e.start_ns < d.last_mark_raw_ns ? d.previous : d.current;
  if (b == nullptr) {
    ++stats_.events_late;
    return;
  }
  if (b->events.size() >= options_.max_events_per_device_step) {
    ++stats_.events_dropped;
    return;
  }
  b->events.push_back(e);
  if (++buffered_events_ > options_.max_buffered_events) [[unlikely]] {
    EnforceBounds();
  }
}

void StepAssembler::OnHostSync(Device& d, const DeviceEvent& e) {
  DeviceStepBuffer* b =
      d.previous != nullptr && e.start_ns < d.last_mark_raw_ns ? d.previous : d.current;
  if (b == nullptr) {
    ++stats_.events_late;
    return;
  }
  if (b->host_syncs.size() >= DeviceStepBuffer::kMaxHostIntervals) {
    ++stats_.events_dropped;
    return;
  }
  b->host_syncs.push_back({e.start_ns, std::max(e.start_ns, e.end_ns)});
}

DeviceStepBuffer* StepAssembler::GpuBufferFor(const Device& d, int64_t at, uint64_t* step) const {
  if (!d.has_mark) {
    *step = 0;
    return d.current;  // the prelude, placed at the first mark
  }
  // The last open step starting at or before `at`.
  auto it = std::upper_bound(d.spans.begin(), d.spans.end(), at,
                             [](int64_t t, const Device::Span& s) { return t < s.start_raw_ns; });
  if (it == d.spans.begin()) return nullptr;  // launched in a step that closed
  const Device::Span& span = *(it - 1);
  if (span.buffer->ended && at >= span.buffer->end_raw_ns) return nullptr;  // a step not kept
  *step = span.step;
  return span.buffer;
}

void StepAssembler::OnGpuWork(uint32_t rank, Device& d, const DeviceEvent& e) {
  const int64_t at = PlacingTime(e);
  uint64_t step = 0;
  DeviceStepBuffer* b = GpuBufferFor(d, at, &step);
  if (b != nullptr && b->events.size() >= options_.max_events_per_device_step) {
    ++stats_.events_dropped;
    b = nullptr;
  } else if (b == nullptr) {
    ++stats_.events_late;
  }
  if (b != nullptr) {
    if (e.kind == v1::EVENT_KIND_GPU_COLLECTIVE) {
      gpu_matcher_.NoteArrival(
          rank, e, std::max<uint64_t>(step, static_cast<uint64_t>(closed_through_ + 1)));
    }
    Place(b, e);
  }
  // What the closing waits for: each stream's latest launch.
  const GpuWorkProgress::Before before =
      d.gpu.Note(uint64_t{e.gpu_device} << 32 | e.gpu_stream, at);
  const int64_t stream_before = before.stream_launch_ns;
  const int64_t max_before = before.max_launch_ns;
  // The oldest step may close once a launch passes its end on this stream,
  // or on any stream the next step's end (see AwaitsGpuWork).
  if (!open_.empty()) {
    auto oldest = open_.begin();
    auto ended_at = [rank](const OpenStep& open) {
      const DeviceStepBuffer* b = rank < open.buffers.size() ? open.buffers[rank].get() : nullptr;
      return b != nullptr && b->ended ? b->end_raw_ns : std::numeric_limits<int64_t>::max();
    };
    const int64_t end = ended_at(oldest->second);
    auto next = std::next(oldest);
    const int64_t next_end = next != open_.end() && next->first == oldest->first + 1
                                 ? ended_at(next->second)
                                 : std::numeric_limits<int64_t>::max();
    if (((stream_before < end || max_before < end) && at >= end) ||
        (max_before < next_end && at >= next_end)) {
      TryClose();
    }
  }
  if (buffered_events_ > options_.max_buffered_events) [[unlikely]] {
    EnforceBounds();
  }
}

void StepAssembler::Place(DeviceStepBuffer* b, const DeviceEvent& e) {
  b->events.push_back(e);
  ++buffered_events_;
  if (!e.IsGpu()) return;
  ++b->gpu_events;
  if (e.kind == v1::EVENT_KIND_GPU_COLLECTIVE) ++b->gpu_collectives;
  b->NoteGpuStream(uint64_t{e.gpu_device} << 32 | e.gpu_stream);
}

void StepAssembler::OnOperatorEnd(Device& d, const DeviceEvent& e) {
  if (std::optional<DeviceEvent> op = d.operators.End(e)) {
    Push(d, *op);
  } else {
    ++stats_.events_dropped;
  }
}

void StepAssembler::RefreshCounterNames() {
  strings_seen_ = strings_->size();
  if (flops_name_ == 0) flops_name_ = strings_->Find("flops");
  if (peak_memory_name_ == 0) peak_memory_name_ = strings_->Find("memory.peak_bytes");
  if (stage_name_ == 0) stage_name_ = strings_->Find("pipeline.stage");
}

void StepAssembler::OnCounter(Device& d, const DeviceEvent& e) {
  if (strings_->size() != strings_seen_) RefreshCounterNames();
  if (e.name == 0) return;
  if (e.name == flops_name_) {
    DeviceStepBuffer* b = d.current;
    if (b == nullptr) return;
    b->flops += e.value;
    // The plugin records the counter right after its operator, at its end.
    const size_t n = b->events.size();
    for (size_t i = n, seen = 0; i-- > 0 && seen < kFlopsLookback; ++seen) {
      DeviceEvent& op = b->events[i];
      if (op.kind == v1::EVENT_KIND_OPERATOR && op.thread == e.thread && op.end_ns == e.start_ns) {
        op.group_sequence += e.value;
        break;
      }
    }
  } else if (e.name == peak_memory_name_) {
    // Stamped at a step mark: the peak of the step that ended there.
    DeviceStepBuffer* b =
        (d.previous != nullptr && e.start_ns == d.last_mark_raw_ns) ? d.previous : d.current;
    if (b != nullptr) b->peak_memory = std::max(b->peak_memory, e.value);
  } else if (e.name == stage_name_) {
    d.stage = static_cast<uint32_t>(e.value);
  }
}

void StepAssembler::OnPhase(Device& d, const DeviceEvent& e) {
  DeviceStepBuffer* b = d.current;
  if (d.has_mark && e.value != d.step) {
    // The plugin records a step's derived phases just before its end mark;
    // explicit phases may end after it.
    b = (d.previous != nullptr && e.value == d.previous_step) ? d.previous : nullptr;
  }
  if (b == nullptr) {
    ++stats_.events_late;
    return;
  }
  if (e.detail == 0 || e.detail >= b->phase_ns.size()) return;
  b->phase_ns[e.detail] += std::max<int64_t>(0, e.end_ns - e.start_ns);
  b->phase_seen[e.detail] = true;
  if (e.detail == v1::PHASE_DATA_WAIT &&
      b->data_waits.size() < DeviceStepBuffer::kMaxHostIntervals) {
    b->data_waits.push_back({e.start_ns, std::max(e.start_ns, e.end_ns)});
  }
}

DeviceStepBuffer* StepAssembler::BufferFor(uint64_t step, uint32_t rank) {
  OpenStep& open = open_[step];
  if (open.buffers.size() <= rank) open.buffers.resize(rank + 1);
  if (open.buffers[rank] == nullptr) {
    open.buffers[rank] = pool_.TakeBuffer(devices_[rank]->last_step_events);
  }
  return open.buffers[rank].get();
}

void StepAssembler::OnStepMark(uint32_t rank, Device& d, const DeviceEvent& e) {
  const uint64_t next = e.value;
  const int64_t at = e.start_ns;
  if (d.has_mark && next <= d.step) {
    // A repeated or backwards mark: keep filling the current step.
    ++stats_.marks_out_of_order;
    return;
  }
  DeviceStepBuffer* ended = nullptr;
  uint64_t ended_step = 0;
  const bool first_mark = !d.has_mark;
  // The first mark: what arrived before it but happened at or after it
  // (another thread's event, work launched after it) is the new step's.
  DeviceStepBuffer after_mark;
  if (first_mark) {
    std::unique_ptr<DeviceStepBuffer> prelude = std::move(d.prelude);
    MoveFrom(prelude.get(), at, &after_mark);
    const bool empty = prelude->events.empty() && prelude->flops == 0 &&
                       std::none_of(prelude->phase_seen.begin(), prelude->phase_seen.end(),
                                    [](bool seen) { return seen; });
    if (!empty && next >= 1 && static_cast<int64_t>(next - 1) > closed_through_) {
      ended_step = next - 1;
      OpenStep& open = open_[ended_step];
      if (open.buffers.size() <= rank) open.buffers.resize(rank + 1);
      open.buffers[rank] = std::move(prelude);
      ended = open.buffers[rank].get();
      d.spans.push_back({std::numeric_limits<int64_t>::min(), ended_step, ended});
    } else {
      stats_.events_late += prelude->events.size();
      buffered_events_ -= prelude->events.size();
    }
  } else {
    ended = d.current;
    ended_step = d.step;
  }
  if (ended != nullptr) {
    ended->ended = true;
    ended->end_raw_ns = at;
  }
  d.previous = ended;
  d.previous_step = ended_step;
  d.has_mark = true;
  d.past_mark = false;
  d.mark_in_batch = true;
  d.step = next;
  d.last_mark_raw_ns = at;
  if (static_cast<int64_t>(next) > closed_through_) {
    DeviceStepBuffer* b = BufferFor(next, rank);
    b->has_start = true;
    b->start_raw_ns = at;
    d.current = b;
    d.spans.push_back({at, next, b});
    MoveFrom(&after_mark, std::numeric_limits<int64_t>::min(), b);
  } else {
    d.current = nullptr;
    stats_.events_late += after_mark.events.size();
    buffered_events_ -= after_mark.events.size();
  }
  TryClose();
}

void StepAssembler::MoveFrom(DeviceStepBuffer* from, int64_t at, DeviceStepBuffer* to) {
  if (from->events.empty() && from->host_syncs.empty()) return;
  std::vector<DeviceEvent> events = std::move(from->events);
  from->events.clear();
  from->gpu_events = from->gpu_collectives = 0;
  from->gpu_streams.clear();
  buffered_events_ -= events.size();
  for (const DeviceEvent& e : events) Place(PlacingTime(e) >= at ? to : from, e);
  std::vector<DeviceStepBuffer::RawInterval> syncs = std::move(from->host_syncs);
  from->host_syncs.clear();
  for (const DeviceStepBuffer::RawInterval& iv : syncs) {
    (iv.start_ns >= at ? to : from)->host_syncs.push_back(iv);
  }
}

void StepAssembler::NoteArrival(uint32_t rank, Device& d, const DeviceEvent& e) {
  // The first step whose close may need the instance.
  const uint64_t step = std::max<uint64_t>(d.step, static_cast<uint64_t>(closed_through_ + 1));
  matcher_.NoteArrival(rank, e, step);
}

bool StepAssembler::PassedOnHost(const Device& d, uint64_t step) const {
  if (!d.has_mark || d.step <= step) return false;
  // Passed it, but what belongs to it may still follow the mark.
  return d.past_mark || d.previous == nullptr || d.previous_step != step;
}

bool StepAssembler::AwaitsGpuWork(uint32_t rank, const Device& d, uint64_t step) const {
  if (!d.gpu.gpu()) return false;  // the common case: no lookups
  auto it = open_.find(step);
  if (it == open_.end() || rank >= it->second.buffers.size()) return false;
  const DeviceStepBuffer* next = nullptr;
  if (auto n = open_.find(step + 1); n != open_.end() && rank < n->second.buffers.size()) {
    next = n->second.buffers[rank].get();
  }
  return d.gpu.Awaits(step, it->second.buffers[rank].get(), next);
}

bool StepAssembler::Blocks(uint32_t rank, const Device& d, uint64_t step) const {
  if (!d.liveness.CanBlock()) return false;
  if (!PassedOnHost(d, step)) return true;
  return AwaitsGpuWork(rank, d, step);
}

void StepAssembler::Tick(int64_t now_unix_ns) {
  for (const std::unique_ptr<Device>& p : devices_) {
    if (p != nullptr) p->liveness.Tick(now_unix_ns, options_.silent_after_ns);
  }
  world_size_wait_.Tick(now_unix_ns, KnownDevices(), options_.silent_after_ns);
  BoundGpuWaits(now_unix_ns);
  TryClose();
}

void StepAssembler::BoundGpuWaits(int64_t now_unix_ns) {
  if (open_.empty()) return;
  const uint64_t step = open_.begin()->first;
  for (uint32_t rank = 0; rank < devices_.size(); ++rank) {
    if (devices_[rank] == nullptr) continue;
    Device& d = *devices_[rank];
    const bool awaiting =
        d.liveness.CanBlock() && PassedOnHost(d, step) && AwaitsGpuWork(rank, d, step);
    if (d.gpu.BoundWait(step, awaiting, now_unix_ns, options_.gpu_wait_ns)) {
      ++stats_.gpu_waits_timed_out;
    }
  }
}

void StepAssembler::TryClose() {
  while (!open_.empty() && !AwaitingDevices()) {
    const uint64_t step = open_.begin()->first;
    bool blocked = false;
    for (uint32_t rank = 0; rank < devices_.size(); ++rank) {
      if (devices_[rank] != nullptr && Blocks(rank, *devices_[rank], step)) {
        blocked = true;
        break;
      }
    }
    if (blocked) break;
    CloseOldest(/*forced=*/false);
  }
  EnforceBounds();
}

void StepAssembler::EnforceBounds() {
  while (!open_.empty() && (open_.size() > options_.max_open_steps ||
                            buffered_events_ > options_.max_buffered_events)) {
    CloseOldest(/*forced=*/true);
  }
}

void StepAssembler::Flush() {
  while (!open_.empty()) CloseOldest(/*forced=*/false);
}

uint32_t StepAssembler::KnownDevices() const {
  uint32_t known = 0;
  for (const auto& d : devices_) known += d != nullptr;
  return known;
}

void StepAssembler::CloseOldest(bool forced) {
  auto it = open_.begin();
  const uint64_t step = it->first;
  OpenStep& open = it->second;

  ClosedStep closed;
  closed.forced = forced;
  StepReportBuilder report(step, strings_);
  size_t events = 0;
  for (const auto& b : open.buffers) events += b != nullptr ? b->events.size() : 0;
  closed.operators = pool_.TakeOperators();
  closed.operators.reserve(events);

  for (uint32_t rank = 0; rank < open.buffers.size(); ++rank) {
    const DeviceStepBuffer* b = open.buffers[rank].get();
    if (b == nullptr) continue;
    Device& d = *devices_[rank];
    v1::DeviceStep device;
    summarizer_.Summarize(rank, d.stage, step, *b, &device, &closed.operators, report.links());
    report.AddDevice(std::move(device));
    buffered_events_ -= b->events.size();
    d.last_step_events = b->events.size();
    // The device may still be inside this step: it drops until its next mark.
    if (d.current == b) d.current = nullptr;
    if (d.previous == b) d.previous = nullptr;
  }
  for (uint32_t rank = 0; rank < devices_.size(); ++rank) {
    const Device* d = devices_[rank].get();
    if (d == nullptr || !d->liveness.live()) continue;
    if (rank < open.buffers.size() && open.buffers[rank] != nullptr) continue;
    if (d->has_mark && d->step > step) continue;  // it skipped this step number
    report.AddMissingRank(rank);
  }
  closed.report = std::move(report).Build();

  for (std::unique_ptr<DeviceStepBuffer>& b : open.buffers) pool_.GiveBuffer(std::move(b));
  open_.erase(it);
  closed_through_ = static_cast<int64_t>(step);
  ++stats_.steps_closed;
  if (forced) ++stats_.steps_forced;
  matcher_.ForgetOlderThan(step, options_.instance_retention_steps);
  gpu_matcher_.ForgetOlderThan(step, options_.instance_retention_steps);
  for (const std::unique_ptr<Device>& d : devices_) {
    if (d == nullptr) continue;
    auto& spans = d->spans;
    spans.erase(spans.begin(),
                std::find_if(spans.begin(), spans.end(),
                             [step](const Device::Span& s) { return s.step > step; }));
  }
  sink_(std::move(closed));
}

void StepAssembler::Recycle(std::vector<OperatorRecord>&& storage) {
  pool_.GiveOperators(std::move(storage));
}

StepAssemblerStats StepAssembler::stats() const {
  StepAssemblerStats s = stats_;
  s.collectives_incomplete = matcher_.incomplete() + gpu_matcher_.incomplete();
  s.buffered_events = buffered_events_;
  s.open_steps = open_.size();
  return s;
}

}  // namespace trainscope::collector
