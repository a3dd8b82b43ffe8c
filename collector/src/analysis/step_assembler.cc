#include "trainscope/collector/analysis/step_assembler.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "trainscope/collector/analysis/step_report_builder.h"

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

namespace {

// OPERATOR_BEGIN events held per device waiting for their END.
constexpr size_t kMaxOpenOperators = 256;
// Buffers of closed steps kept for reuse (a few steps' worth of devices).
constexpr size_t kMaxSpareBuffers = 4096;
// How far back a "flops" counter looks for the operator it belongs to
// (other threads' events may sit in between).
constexpr int kFlopsLookback = 16;

}  // namespace

struct StepAssembler::Device {
  bool live = true;
  bool silent = false;
  bool active = false;  // an event since the last Tick
  bool ticked = false;  // last_seen_ns is set
  int64_t last_seen_ns = 0;
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
  size_t last_step_events = 0;              // to reserve the next step's buffer
  std::vector<DeviceEvent> open_operators;  // OPERATOR_BEGIN awaiting END
};

StepAssembler::StepAssembler(const JobStrings* strings, GroupDirectory* groups,
                             const ReferenceClock* clock, StepAssemblerOptions options,
                             StepSink sink)
    : strings_(strings),
      groups_(groups),
      clock_(clock),
      options_(options),
      sink_(std::move(sink)),
      matcher_(groups, clock, [this] { return KnownDevices(); }),
      summarizer_(clock, &matcher_) {}

StepAssembler::~StepAssembler() = default;

StepAssembler::Device& StepAssembler::NewDevice(uint32_t rank) {
  if (rank >= devices_.size()) devices_.resize(rank + 1);
  devices_[rank] = std::make_unique<Device>();
  Device& d = *devices_[rank];
  d.prelude = std::make_unique<DeviceStepBuffer>();
  d.current = d.prelude.get();
  return d;
}

void StepAssembler::OnDeviceOpened(uint32_t rank) {
  Device& d = DeviceFor(rank);
  d.live = true;
  d.silent = false;
  d.ticked = false;  // the silence clock restarts at the next Tick
}

void StepAssembler::ExpectDevices(uint32_t world_size) {
  expected_devices_ = std::max(expected_devices_, world_size);
}

bool StepAssembler::AwaitingDevices() const {
  return !awaiting_over_ && KnownDevices() < expected_devices_;
}

void StepAssembler::OnDeviceClosed(uint32_t rank) {
  Device& d = DeviceFor(rank);
  d.live = false;
  d.open_operators.clear();
  TryClose();
}

void StepAssembler::Add(uint32_t rank, const DeviceEvent& e) { AddTo(rank, DeviceFor(rank), e); }

void StepAssembler::Add(uint32_t rank, absl::Span<const DeviceEvent> events) {
  // Devices are held by pointer: `d` stays valid while steps close.
  Device& d = DeviceFor(rank);
  for (const DeviceEvent& e : events) AddTo(rank, d, e);
}

inline void StepAssembler::AddTo(uint32_t rank, Device& d, const DeviceEvent& e) {
  d.active = true;
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
      if (d.open_operators.size() < kMaxOpenOperators) {
        d.open_operators.push_back(e);
      } else {
        ++stats_.events_dropped;
      }
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

void StepAssembler::OnOperatorEnd(Device& d, const DeviceEvent& e) {
  // The innermost open operator of the same thread.
  for (size_t i = d.open_operators.size(); i-- > 0;) {
    const DeviceEvent& begin = d.open_operators[i];
    if (begin.thread != e.thread) continue;
    DeviceEvent op = begin;
    op.kind = v1::EVENT_KIND_OPERATOR;
    op.end_ns = std::max(e.start_ns, begin.start_ns);
    if (op.name == 0) op.name = e.name;
    d.open_operators.erase(d.open_operators.begin() + static_cast<ptrdiff_t>(i));
    Push(d, op);
    return;
  }
  ++stats_.events_dropped;
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
}

DeviceStepBuffer* StepAssembler::BufferFor(uint64_t step, uint32_t rank) {
  OpenStep& open = open_[step];
  if (open.buffers.size() <= rank) open.buffers.resize(rank + 1);
  if (open.buffers[rank] == nullptr) {
    // A buffer of a closed step, with its events' storage: one step's
    // buffers are as many allocations as devices otherwise.
    if (spare_buffers_.empty()) {
      open.buffers[rank] = std::make_unique<DeviceStepBuffer>();
    } else {
      open.buffers[rank] = std::move(spare_buffers_.back());
      spare_buffers_.pop_back();
    }
    open.buffers[rank]->events.reserve(devices_[rank]->last_step_events);
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
  if (!d.has_mark) {
    std::unique_ptr<DeviceStepBuffer> prelude = std::move(d.prelude);
    const bool empty = prelude->events.empty() && prelude->flops == 0 &&
                       std::none_of(prelude->phase_seen.begin(), prelude->phase_seen.end(),
                                    [](bool seen) { return seen; });
    if (!empty && next >= 1 && static_cast<int64_t>(next - 1) > closed_through_) {
      ended_step = next - 1;
      OpenStep& open = open_[ended_step];
      if (open.buffers.size() <= rank) open.buffers.resize(rank + 1);
      open.buffers[rank] = std::move(prelude);
      ended = open.buffers[rank].get();
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
  } else {
    d.current = nullptr;
  }
  TryClose();
}

void StepAssembler::NoteArrival(uint32_t rank, Device& d, const DeviceEvent& e) {
  // The first step whose close may need the instance.
  const uint64_t step = std::max<uint64_t>(d.step, static_cast<uint64_t>(closed_through_ + 1));
  matcher_.NoteArrival(rank, e, step);
}

bool StepAssembler::Blocks(const Device& d, uint64_t step) const {
  if (!d.live || d.silent) return false;
  if (!d.has_mark || d.step <= step) return true;
  // Passed it, but what belongs to it may still follow the mark.
  return !d.past_mark && d.previous != nullptr && d.previous_step == step;
}

void StepAssembler::Tick(int64_t now_unix_ns) {
  for (const std::unique_ptr<Device>& p : devices_) {
    if (p == nullptr) continue;
    Device& d = *p;
    if (d.active || !d.ticked) {
      d.active = false;
      d.ticked = true;
      d.silent = false;
      d.last_seen_ns = now_unix_ns;
    } else if (d.live && !d.silent && now_unix_ns - d.last_seen_ns >= options_.silent_after_ns) {
      d.silent = true;
    }
  }
  if (AwaitingDevices()) {
    if (awaiting_since_ns_ == 0) awaiting_since_ns_ = now_unix_ns;
    awaiting_over_ = now_unix_ns - awaiting_since_ns_ >= options_.silent_after_ns;
  }
  TryClose();
}

void StepAssembler::TryClose() {
  while (!open_.empty() && !AwaitingDevices()) {
    const uint64_t step = open_.begin()->first;
    bool blocked = false;
    for (const std::unique_ptr<Device>& d : devices_) {
      if (d != nullptr && Blocks(*d, step)) {
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
  StepReportBuilder report(step);
  size_t events = 0;
  for (const auto& b : open.buffers) events += b != nullptr ? b->events.size() : 0;
  closed.operators = std::move(spare_operators_);
  closed.operators.clear();
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
    if (d == nullptr || !d->live) continue;
    if (rank < open.buffers.size() && open.buffers[rank] != nullptr) continue;
    if (d->has_mark && d->step > step) continue;  // it skipped this step number
    report.AddMissingRank(rank);
  }
  closed.report = std::move(report).Build();

  for (std::unique_ptr<DeviceStepBuffer>& b : open.buffers) {
    if (b == nullptr || spare_buffers_.size() >= kMaxSpareBuffers) continue;
    b->Reset();
    spare_buffers_.push_back(std::move(b));
  }
  open_.erase(it);
  closed_through_ = static_cast<int64_t>(step);
  ++stats_.steps_closed;
  if (forced) ++stats_.steps_forced;
  matcher_.ForgetOlderThan(step, options_.instance_retention_steps);
  sink_(std::move(closed));
}

void StepAssembler::Recycle(std::vector<OperatorRecord>&& storage) {
  if (storage.capacity() > spare_operators_.capacity()) spare_operators_ = std::move(storage);
}

StepAssemblerStats StepAssembler::stats() const {
  StepAssemblerStats s = stats_;
  s.collectives_incomplete = matcher_.incomplete();
  s.buffered_events = buffered_events_;
  s.open_steps = open_.size();
  return s;
}

}  // namespace trainscope::collector
