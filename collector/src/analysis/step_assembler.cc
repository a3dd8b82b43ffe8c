#include "trainscope/collector/analysis/step_assembler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
// OPERATOR_BEGIN events held per device waiting for their END.
constexpr size_t kMaxOpenOperators = 256;
// Buckets of closed steps kept for reuse (a few steps' worth of devices).
constexpr size_t kMaxSpareBuckets = 4096;
// How far back a "flops" counter looks for the operator it belongs to
// (other threads' events may sit in between).
constexpr int kFlopsLookback = 16;

struct Interval {
  int64_t start;
  int64_t end;
};

// Length of the union of `v` (reordered). Nested operators (aten::linear
// around aten::addmm) count once.
int64_t Covered(std::vector<Interval>& v) {
  if (v.empty()) return 0;
  int64_t total = 0;
  // One thread's operators arrive in end order (recorded when they end):
  // sweep from the latest end without sorting.
  if (std::is_sorted(v.begin(), v.end(),
                     [](const Interval& a, const Interval& b) { return a.end < b.end; })) {
    int64_t lo = v.back().start, hi = v.back().end;
    for (size_t i = v.size() - 1; i-- > 0;) {
      if (v[i].end >= lo) {
        lo = std::min(lo, v[i].start);
      } else {
        total += hi - lo;
        lo = v[i].start;
        hi = v[i].end;
      }
    }
    return total + (hi - lo);
  }
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  int64_t lo = v.front().start, hi = v.front().end;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].start <= hi) {
      hi = std::max(hi, v[i].end);
    } else {
      total += hi - lo;
      lo = v[i].start;
      hi = v[i].end;
    }
  }
  return total + (hi - lo);
}

v1::OperatorClass ClassOf(uint32_t collective_kind) {
  switch (collective_kind) {
    case v1::COLLECTIVE_KIND_SEND:
      return v1::OPERATOR_CLASS_SEND;
    case v1::COLLECTIVE_KIND_RECV:
      return v1::OPERATOR_CLASS_RECV;
    default:
      return v1::OPERATOR_CLASS_COLLECTIVE;
  }
}

// Share of a ring collective's bytes that crosses each ring link (NCCL).
double RingFactor(v1::CollectiveKind kind, size_t participants) {
  const double p = static_cast<double>(participants);
  switch (kind) {
    case v1::COLLECTIVE_KIND_ALL_REDUCE:
      return 2.0 * (p - 1.0) / p;
    case v1::COLLECTIVE_KIND_ALL_GATHER:
    case v1::COLLECTIVE_KIND_REDUCE_SCATTER:
      return (p - 1.0) / p;
    default:
      return 0.0;
  }
}

}  // namespace

struct StepAssembler::Bucket {
  // OPERATOR and COLLECTIVE events, in arrival order. For operators,
  // group_sequence carries the FLOPs of their "flops" counter.
  std::vector<DeviceEvent> events;
  int64_t start_raw_ns = 0;
  int64_t end_raw_ns = 0;
  bool has_start = false;
  bool ended = false;
  std::array<int64_t, 5> phase_ns{};  // by v1::Phase
  std::array<bool, 5> phase_seen{};
  uint64_t flops = 0;
  uint64_t peak_memory = 0;

  // Back to a fresh bucket, keeping the events' capacity for reuse.
  void Reset() {
    std::vector<DeviceEvent> kept = std::move(events);
    kept.clear();
    *this = Bucket();
    events = std::move(kept);
  }
};

struct StepAssembler::OpenStep {
  std::vector<std::unique_ptr<Bucket>> buckets;  // by rank
};

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
  bool mark_in_batch = false;  // the latest mark came in the batch now arriving
  uint64_t step = 0;           // the current step, once has_mark
  Bucket* current = nullptr;   // null: dropping until the next mark
  Bucket* previous = nullptr;  // the step the last mark ended, while open
  uint64_t previous_step = 0;
  int64_t last_mark_raw_ns = std::numeric_limits<int64_t>::min();
  std::unique_ptr<Bucket> prelude;  // events before the first mark
  uint32_t stage = 0;
  size_t last_step_events = 0;              // to reserve the next step's bucket
  std::vector<DeviceEvent> open_operators;  // OPERATOR_BEGIN awaiting END
};

struct StepAssembler::Scratch {
  std::vector<Interval> compute, communication, all, forward, backward;
  absl::flat_hash_map<uint32_t, int64_t> waited;  // rank -> wait on it
};

StepAssembler::StepAssembler(const JobStrings* strings, GroupDirectory* groups,
                             const ReferenceClock* clock, StepAssemblerOptions options,
                             StepSink sink)
    : strings_(strings),
      groups_(groups),
      clock_(clock),
      options_(options),
      sink_(std::move(sink)),
      scratch_(std::make_unique<Scratch>()) {}

StepAssembler::~StepAssembler() = default;

StepAssembler::Device& StepAssembler::NewDevice(uint32_t rank) {
  if (rank >= devices_.size()) devices_.resize(rank + 1);
  devices_[rank] = std::make_unique<Device>();
  Device& d = *devices_[rank];
  d.prelude = std::make_unique<Bucket>();
  d.current = d.prelude.get();
  return d;
}

void StepAssembler::OnDeviceOpened(uint32_t rank) {
  Device& d = DeviceFor(rank);
  d.live = true;
  d.silent = false;
  d.ticked = false;  // the silence clock restarts at the next Tick
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
  Bucket* b = d.previous != nullptr && e.start_ns < d.last_mark_raw_ns ? d.previous : d.current;
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
    Bucket* b = d.current;
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
    Bucket* b =
        (d.previous != nullptr && e.start_ns == d.last_mark_raw_ns) ? d.previous : d.current;
    if (b != nullptr) b->peak_memory = std::max(b->peak_memory, e.value);
  } else if (e.name == stage_name_) {
    d.stage = static_cast<uint32_t>(e.value);
  }
}

void StepAssembler::OnPhase(Device& d, const DeviceEvent& e) {
  Bucket* b = d.current;
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

StepAssembler::Bucket* StepAssembler::BucketFor(uint64_t step, uint32_t rank) {
  OpenStep& open = open_[step];
  if (open.buckets.size() <= rank) open.buckets.resize(rank + 1);
  if (open.buckets[rank] == nullptr) {
    // A bucket of a closed step, with its events' storage: one step's
    // buckets are as many allocations as devices otherwise.
    if (spare_buckets_.empty()) {
      open.buckets[rank] = std::make_unique<Bucket>();
    } else {
      open.buckets[rank] = std::move(spare_buckets_.back());
      spare_buckets_.pop_back();
    }
    open.buckets[rank]->events.reserve(devices_[rank]->last_step_events);
  }
  return open.buckets[rank].get();
}

void StepAssembler::OnStepMark(uint32_t rank, Device& d, const DeviceEvent& e) {
  const uint64_t next = e.value;
  const int64_t at = e.start_ns;
  if (d.has_mark && next <= d.step) {
    // A repeated or backwards mark: keep filling the current step.
    ++stats_.marks_out_of_order;
    return;
  }
  Bucket* ended = nullptr;
  uint64_t ended_step = 0;
  if (!d.has_mark) {
    std::unique_ptr<Bucket> prelude = std::move(d.prelude);
    const bool empty = prelude->events.empty() && prelude->flops == 0 &&
                       std::none_of(prelude->phase_seen.begin(), prelude->phase_seen.end(),
                                    [](bool seen) { return seen; });
    if (!empty && next >= 1 && static_cast<int64_t>(next - 1) > closed_through_) {
      ended_step = next - 1;
      OpenStep& open = open_[ended_step];
      if (open.buckets.size() <= rank) open.buckets.resize(rank + 1);
      open.buckets[rank] = std::move(prelude);
      ended = open.buckets[rank].get();
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
    Bucket* b = BucketFor(next, rank);
    b->has_start = true;
    b->start_raw_ns = at;
    d.current = b;
  } else {
    d.current = nullptr;
  }
  TryClose();
}

void StepAssembler::NoteArrival(uint32_t rank, Device& d, const DeviceEvent& e) {
  InstanceKey key{e.group, kNoRank, kNoRank, e.group_sequence};
  if (e.detail == v1::COLLECTIVE_KIND_SEND || e.detail == v1::COLLECTIVE_KIND_RECV) {
    if (e.peer < 0 || static_cast<uint32_t>(e.peer) == rank) return;
    const bool send = e.detail == v1::COLLECTIVE_KIND_SEND;
    key.src = send ? rank : static_cast<uint32_t>(e.peer);
    key.dst = send ? static_cast<uint32_t>(e.peer) : rank;
  }
  groups_->NoteUse(e.group, rank);
  auto [it, inserted] = instances_.try_emplace(key);
  if (inserted) {
    it->second.kind = static_cast<v1::CollectiveKind>(e.detail);
    const uint64_t first_step =
        std::max<uint64_t>(d.step, static_cast<uint64_t>(closed_through_ + 1));
    instance_order_.emplace_back(first_step, key);
  }
  it->second.arrivals.push_back(Arrival{rank, e.start_ns, e.end_ns, e.value});
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
  TryClose();
}

void StepAssembler::TryClose() {
  while (!open_.empty()) {
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

uint32_t StepAssembler::ExpectedParticipants(const InstanceKey& key) {
  if (key.src != kNoRank) return 2;
  const size_t members = groups_->Members(key.group).size();
  if (members > 0) return static_cast<uint32_t>(members);
  size_t known = 0;
  for (const auto& d : devices_) known += d != nullptr;
  return static_cast<uint32_t>(known);
}

void StepAssembler::UpdateLatest(Instance& inst) {
  if (inst.cached_arrivals == inst.arrivals.size()) return;
  bool first = true;
  for (const Arrival& a : inst.arrivals) {
    const int64_t start = clock_->ToReference(a.rank, a.raw_start_ns);
    if (first || start > inst.latest_start_ns) {
      inst.latest_start_ns = start;
      inst.latest_rank = a.rank;
      first = false;
    }
  }
  inst.cached_arrivals = static_cast<uint32_t>(inst.arrivals.size());
}

void StepAssembler::ReportLinks(const InstanceKey& key, const Instance& inst,
                                std::map<LinkKey, LinkTotals>* links) {
  if (key.src != kNoRank) {
    const Arrival* send = nullptr;
    const Arrival* recv = nullptr;
    for (const Arrival& a : inst.arrivals) {
      if (a.rank == key.src && send == nullptr) send = &a;
      if (a.rank == key.dst && recv == nullptr) recv = &a;
    }
    if (send == nullptr || recv == nullptr) return;
    const int64_t send_start = clock_->ToReference(send->rank, send->raw_start_ns);
    const int64_t recv_start = clock_->ToReference(recv->rank, recv->raw_start_ns);
    const int64_t recv_end = clock_->ToReference(recv->rank, recv->raw_end_ns);
    LinkTotals& t = (*links)[LinkKey{key.src, key.dst, false}];
    t.bytes += std::max(send->bytes, recv->bytes);
    t.duration_ns += std::max<int64_t>(0, recv_end - std::max(send_start, recv_start));
    ++t.transfers;
    return;
  }
  const size_t p = inst.arrivals.size();
  const double factor = RingFactor(inst.kind, p);
  if (p < 2 || factor <= 0.0) return;
  std::vector<const Arrival*> ring;
  ring.reserve(p);
  for (const Arrival& a : inst.arrivals) ring.push_back(&a);
  std::sort(ring.begin(), ring.end(),
            [](const Arrival* a, const Arrival* b) { return a->rank < b->rank; });
  for (size_t i = 0; i < p; ++i) {
    const Arrival& src = *ring[i];
    const Arrival& dst = *ring[(i + 1) % p];
    const int64_t dst_end = clock_->ToReference(dst.rank, dst.raw_end_ns);
    LinkTotals& t = (*links)[LinkKey{src.rank, dst.rank, true}];
    t.bytes += static_cast<uint64_t>(std::llround(factor * static_cast<double>(src.bytes)));
    t.duration_ns += std::max<int64_t>(0, dst_end - inst.latest_start_ns);
    ++t.transfers;
  }
}

int64_t StepAssembler::CommunicationWait(const OperatorRecord& op, uint32_t* waited_for,
                                         std::map<LinkKey, LinkTotals>* links) {
  InstanceKey key{op.group, kNoRank, kNoRank, op.group_sequence};
  if (op.op_class != v1::OPERATOR_CLASS_COLLECTIVE) {
    if (op.peer < 0 || static_cast<uint32_t>(op.peer) == op.rank) return 0;
    const bool send = op.op_class == v1::OPERATOR_CLASS_SEND;
    key.src = send ? op.rank : static_cast<uint32_t>(op.peer);
    key.dst = send ? static_cast<uint32_t>(op.peer) : op.rank;
  }
  auto it = instances_.find(key);
  if (it == instances_.end()) return 0;
  Instance& inst = it->second;
  ++inst.consumed;
  UpdateLatest(inst);
  const bool complete = inst.arrivals.size() >= ExpectedParticipants(key);
  if (!complete) ++stats_.collectives_incomplete;
  const int64_t wait =
      std::clamp<int64_t>(inst.latest_start_ns - op.start_ns, 0, op.end_ns - op.start_ns);
  *waited_for = inst.latest_rank;
  if (complete && !inst.links_reported) {
    ReportLinks(key, inst, links);
    inst.links_reported = true;
  }
  if (complete && inst.consumed >= inst.arrivals.size()) instances_.erase(it);
  return wait;
}

void StepAssembler::Summarize(uint32_t rank, const Device& d, uint64_t step, const Bucket& b,
                              v1::DeviceStep* out, std::vector<OperatorRecord>* ops,
                              std::map<LinkKey, LinkTotals>* links) {
  Scratch& s = *scratch_;
  s.compute.clear();
  s.communication.clear();
  s.all.clear();
  s.forward.clear();
  s.backward.clear();
  s.waited.clear();

  int64_t first_start = std::numeric_limits<int64_t>::max();
  int64_t last_end = std::numeric_limits<int64_t>::min();
  int64_t wait = 0;
  uint32_t operators = 0, collectives = 0;
  for (const DeviceEvent& e : b.events) {
    OperatorRecord& op = ops->emplace_back();
    op.raw_start_ns = e.start_ns;
    op.raw_end_ns = e.end_ns;
    op.start_ns = clock_->ToReference(rank, e.start_ns);
    op.end_ns = clock_->ToReference(rank, e.end_ns);
    op.step = step;
    op.rank = rank;
    op.name = e.name;
    op.thread = e.thread;
    op.stage = d.stage;
    first_start = std::min(first_start, op.start_ns);
    last_end = std::max(last_end, op.end_ns);
    const Interval iv{op.start_ns, op.end_ns};
    s.all.push_back(iv);
    if (e.kind == v1::EVENT_KIND_OPERATOR) {
      op.op_class = v1::OPERATOR_CLASS_COMPUTE;
      op.op_sequence = e.value;
      op.flops = e.group_sequence;  // see Bucket::events
      op.scope = static_cast<v1::OperatorScope>(e.detail);
      ++operators;
      s.compute.push_back(iv);
      if (e.detail == v1::OPERATOR_SCOPE_FORWARD) s.forward.push_back(iv);
      if (e.detail == v1::OPERATOR_SCOPE_BACKWARD) s.backward.push_back(iv);
    } else {
      op.op_class = ClassOf(e.detail);
      op.collective_kind = static_cast<v1::CollectiveKind>(e.detail);
      op.bytes = e.value;
      op.group = e.group;
      op.group_sequence = e.group_sequence;
      op.peer = e.peer;
      ++collectives;
      s.communication.push_back(iv);
      uint32_t waited_for = kNoRank;
      const int64_t w = CommunicationWait(op, &waited_for, links);
      if (w > 0) {
        wait += w;
        s.waited[waited_for] += w;
      }
    }
  }

  const bool any = !b.events.empty();
  const int64_t start =
      b.has_start ? clock_->ToReference(rank, b.start_raw_ns) : (any ? first_start : 0);
  const int64_t end =
      b.ended ? clock_->ToReference(rank, b.end_raw_ns) : std::max(start, any ? last_end : start);
  const int64_t step_time = std::max<int64_t>(0, end - start);
  // Clip to the step: an operator may straddle a mark.
  for (std::vector<Interval>* v : {&s.compute, &s.communication, &s.all, &s.forward, &s.backward}) {
    for (Interval& iv : *v) {
      iv.start = std::clamp(iv.start, start, end);
      iv.end = std::clamp(iv.end, start, end);
    }
  }
  const int64_t compute = Covered(s.compute);
  const int64_t communication = Covered(s.communication);
  const int64_t busy = Covered(s.all);

  out->set_step(step);
  out->set_rank(rank);
  out->set_stage(d.stage);
  out->set_start_ns(start);
  out->set_end_ns(end);
  out->set_step_time_ns(step_time);
  int64_t data_wait = 0;
  if (b.phase_seen[v1::PHASE_DATA_WAIT]) {
    data_wait = b.phase_ns[v1::PHASE_DATA_WAIT];
  } else if (any && b.has_start) {
    data_wait = std::clamp<int64_t>(first_start - start, 0, step_time);
  }
  out->set_data_wait_ns(data_wait);
  out->set_forward_ns(b.phase_seen[v1::PHASE_FORWARD] ? b.phase_ns[v1::PHASE_FORWARD]
                                                      : Covered(s.forward));
  out->set_backward_ns(b.phase_seen[v1::PHASE_BACKWARD] ? b.phase_ns[v1::PHASE_BACKWARD]
                                                        : Covered(s.backward));
  out->set_optimizer_ns(b.phase_ns[v1::PHASE_OPTIMIZER]);
  out->set_compute_ns(compute);
  out->set_collective_ns(communication);
  wait = std::min(wait, communication);
  out->set_wait_ns(wait);
  out->set_transfer_ns(communication - wait);
  out->set_idle_ns(std::max<int64_t>(0, step_time - busy));
  out->set_flops(b.flops);
  out->set_flops_per_second(
      compute > 0 ? static_cast<double>(b.flops) * 1e9 / static_cast<double>(compute) : 0.0);
  out->set_peak_memory_bytes(b.peak_memory);
  out->set_operators(operators);
  out->set_collectives(collectives);
  int32_t waited_for = -1;
  int64_t most = 0;
  for (const auto& [r, w] : s.waited) {
    if (w > most || (w == most && waited_for >= 0 && static_cast<int32_t>(r) < waited_for)) {
      most = w;
      waited_for = static_cast<int32_t>(r);
    }
  }
  out->set_waited_for_rank(waited_for);
  out->set_complete(b.ended);
}

void StepAssembler::CloseOldest(bool forced) {
  auto it = open_.begin();
  const uint64_t step = it->first;
  OpenStep& open = it->second;

  ClosedStep closed;
  closed.forced = forced;
  v1::StepReport& report = closed.report;
  report.set_step(step);
  std::map<LinkKey, LinkTotals> links;
  struct StageTotals {
    std::vector<uint32_t> ranks;
    uint64_t flops = 0;
    int64_t compute_ns = 0;
    int64_t bubble_ns = 0;
  };
  std::map<uint32_t, StageTotals> stages;
  int64_t report_start = std::numeric_limits<int64_t>::max();
  int64_t report_end = std::numeric_limits<int64_t>::min();
  size_t events = 0;
  for (const auto& b : open.buckets) events += b != nullptr ? b->events.size() : 0;
  closed.operators = std::move(spare_operators_);
  closed.operators.clear();
  closed.operators.reserve(events);

  for (uint32_t rank = 0; rank < open.buckets.size(); ++rank) {
    const Bucket* b = open.buckets[rank].get();
    if (b == nullptr) continue;
    Device& d = *devices_[rank];
    v1::DeviceStep* ds = report.add_devices();
    Summarize(rank, d, step, *b, ds, &closed.operators, &links);
    report_start = std::min(report_start, ds->start_ns());
    report_end = std::max(report_end, ds->end_ns());
    StageTotals& st = stages[ds->stage()];
    st.ranks.push_back(rank);
    st.flops += ds->flops();
    st.compute_ns += ds->compute_ns();
    st.bubble_ns += ds->idle_ns() + ds->wait_ns();
    buffered_events_ -= b->events.size();
    d.last_step_events = b->events.size();
    // The device may still be inside this step: it drops until its next mark.
    if (d.current == b) d.current = nullptr;
    if (d.previous == b) d.previous = nullptr;
  }
  for (uint32_t rank = 0; rank < devices_.size(); ++rank) {
    const Device* d = devices_[rank].get();
    if (d == nullptr || !d->live) continue;
    if (rank < open.buckets.size() && open.buckets[rank] != nullptr) continue;
    if (d->has_mark && d->step > step) continue;  // it skipped this step number
    report.add_missing_ranks(rank);
  }
  if (report.devices_size() > 0) {
    report.set_start_ns(report_start);
    report.set_end_ns(report_end);
  }
  for (const auto& [key, t] : links) {
    v1::LinkStep* l = report.add_links();
    l->set_step(step);
    l->set_src_rank(key.src);
    l->set_dst_rank(key.dst);
    l->set_link_type(key.collective ? "collective" : "p2p");
    l->set_bytes(t.bytes);
    l->set_duration_ns(t.duration_ns);
    l->set_bytes_per_second(t.duration_ns > 0 ? static_cast<double>(t.bytes) * 1e9 /
                                                    static_cast<double>(t.duration_ns)
                                              : 0.0);
    l->set_transfers(t.transfers);
  }
  for (const auto& [stage, t] : stages) {
    v1::StageStep* s = report.add_stages();
    const int64_t n = static_cast<int64_t>(t.ranks.size());
    s->set_step(step);
    s->set_stage(stage);
    for (uint32_t r : t.ranks) s->add_ranks(r);
    s->set_flops(t.flops);
    s->set_compute_ns(t.compute_ns / n);
    s->set_bubble_ns(t.bubble_ns / n);
  }

  for (std::unique_ptr<Bucket>& b : open.buckets) {
    if (b == nullptr || spare_buckets_.size() >= kMaxSpareBuckets) continue;
    b->Reset();
    spare_buckets_.push_back(std::move(b));
  }
  open_.erase(it);
  closed_through_ = static_cast<int64_t>(step);
  ++stats_.steps_closed;
  if (forced) ++stats_.steps_forced;
  ForgetOldInstances(step);
  sink_(std::move(closed));
}

void StepAssembler::ForgetOldInstances(uint64_t step) {
  while (!instance_order_.empty() &&
         instance_order_.front().first + options_.instance_retention_steps < step) {
    instances_.erase(instance_order_.front().second);
    instance_order_.pop_front();
  }
}

void StepAssembler::Recycle(std::vector<OperatorRecord>&& storage) {
  if (storage.capacity() > spare_operators_.capacity()) spare_operators_ = std::move(storage);
}

StepAssemblerStats StepAssembler::stats() const {
  StepAssemblerStats s = stats_;
  s.buffered_events = buffered_events_;
  s.open_steps = open_.size();
  return s;
}

}  // namespace trainscope::collector
