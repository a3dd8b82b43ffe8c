// StepAssembler: closing a step (see step_assembler.h): collective waits and
// transfers, links, per-device metrics, stages; forced closes and bounds.
#include <algorithm>
#include <cmath>
#include <utility>

#include "step_assembler_internal.h"
#include "trainscope/collector/analysis/step_assembler.h"

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;
using step_internal::ClassOf;
using step_internal::Covered;
using step_internal::Interval;
using step_internal::kMaxSpareBuckets;
using step_internal::kNoRank;
using step_internal::RingFactor;

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
    }
    if (first || start < inst.earliest_start_ns) inst.earliest_start_ns = start;
    first = false;
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
                                         int64_t* lateness, std::map<LinkKey, LinkTotals>* links) {
  *lateness = 0;
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
  if (complete && key.src == kNoRank)
    *lateness = std::max<int64_t>(0, op.start_ns - inst.earliest_start_ns);
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
  int64_t lateness = 0;
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
      int64_t late = 0;
      const int64_t w = CommunicationWait(op, &waited_for, &late, links);
      lateness += late;
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
  out->set_lateness_ns(lateness);
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
