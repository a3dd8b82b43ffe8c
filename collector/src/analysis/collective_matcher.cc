#include "trainscope/collector/analysis/collective_matcher.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

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

CollectiveMatcher::CollectiveMatcher(GroupDirectory* groups, const ReferenceClock* clock,
                                     std::function<uint32_t()> known_devices)
    : groups_(groups), clock_(clock), known_devices_(std::move(known_devices)) {}

void CollectiveMatcher::NoteArrival(uint32_t rank, const DeviceEvent& e, uint64_t step) {
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
    order_.emplace_back(step, key);
  }
  it->second.arrivals.push_back(Arrival{rank, e.start_ns, e.end_ns, e.value});
}

uint32_t CollectiveMatcher::ExpectedParticipants(const InstanceKey& key) {
  if (key.src != kNoRank) return 2;
  const size_t members = groups_->Members(key.group).size();
  if (members > 0) return static_cast<uint32_t>(members);
  return known_devices_();
}

void CollectiveMatcher::UpdateLatest(Instance& inst) {
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

void CollectiveMatcher::ReportLinks(const InstanceKey& key, const Instance& inst, Links* links) {
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
    const uint64_t bytes = std::max(send->bytes, recv->bytes);
    const int64_t duration = std::max<int64_t>(0, recv_end - std::max(send_start, recv_start));
    t.bytes += bytes;
    t.duration_ns += duration;
    ++t.transfers;
    if (traffic_model_ != nullptr) {
      PairTotals& p = links->traffic[PairKey{key.src, key.dst, key.group, true}];
      p.bytes += bytes;
      p.duration_ns += duration;
      ++p.messages;
      p.backend =
          nccl_kernels_ ? TrafficModel::Backend::kNccl : traffic_model_->RankBackend(key.src);
    }
    return;
  }
  if (traffic_model_ != nullptr) ReportTraffic(key, inst, links);
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

void CollectiveMatcher::ReportTraffic(const InstanceKey& key, const Instance& inst, Links* links) {
  if (inst.arrivals.empty()) return;
  // The group's members in group-rank order; a group whose members are
  // only learned counts those that arrived.
  members_ = groups_->Members(key.group);
  if (members_.size() < 2) {
    members_.clear();
    for (const Arrival& a : inst.arrivals) members_.push_back(a.rank);
    std::sort(members_.begin(), members_.end());
  }
  uint64_t bytes = 0;
  receive_end_.clear();
  for (const Arrival& a : inst.arrivals) {
    bytes = std::max(bytes, a.bytes);
    receive_end_.try_emplace(a.rank, clock_->ToReference(a.rank, a.raw_end_ns));
  }
  const TrafficModel::Backend backend = nccl_kernels_
                                            ? TrafficModel::Backend::kNccl
                                            : traffic_model_->RankBackend(inst.arrivals[0].rank);
  flows_.clear();
  // The events name no root: the group's first rank (PyTorch's default
  // src/dst of 0 in a group of its own numbering).
  traffic_model_->Collective(backend, inst.kind, members_, bytes, /*root=*/0, &flows_);
  for (const TrafficModel::Flow& f : flows_) {
    PairTotals& p = links->traffic[PairKey{f.src, f.dst, key.group, false}];
    p.bytes += f.bytes;
    p.messages += f.messages;
    p.backend = backend;
    auto end = receive_end_.find(f.dst);
    if (end != receive_end_.end()) {
      p.duration_ns += std::max<int64_t>(0, end->second - inst.latest_start_ns);
    }
  }
}

CollectiveMatcher::Wait CollectiveMatcher::Match(const OperatorRecord& op, Links* links) {
  Wait out;
  InstanceKey key{op.group, kNoRank, kNoRank, op.group_sequence};
  // A CPU call's class says send or receive; an NCCL kernel's
  // (GPU_COLLECTIVE) does not, its collective kind does.
  const bool send = op.op_class == v1::OPERATOR_CLASS_SEND ||
                    op.collective_kind == v1::COLLECTIVE_KIND_SEND;
  const bool recv = op.op_class == v1::OPERATOR_CLASS_RECV ||
                    op.collective_kind == v1::COLLECTIVE_KIND_RECV;
  if (send || recv) {
    if (op.peer < 0 || static_cast<uint32_t>(op.peer) == op.rank) return out;
    key.src = send ? op.rank : static_cast<uint32_t>(op.peer);
    key.dst = send ? static_cast<uint32_t>(op.peer) : op.rank;
  }
  auto it = instances_.find(key);
  if (it == instances_.end()) return out;
  Instance& inst = it->second;
  ++inst.consumed;
  UpdateLatest(inst);
  const bool complete = inst.arrivals.size() >= ExpectedParticipants(key);
  if (!complete) ++incomplete_;
  out.wait_ns = std::clamp<int64_t>(inst.latest_start_ns - op.start_ns, 0, op.end_ns - op.start_ns);
  out.waited_for = inst.latest_rank;
  if (complete && key.src == kNoRank) {
    out.lateness_ns = std::max<int64_t>(0, op.start_ns - inst.earliest_start_ns);
  }
  if (complete && !inst.links_reported) {
    ReportLinks(key, inst, links);
    inst.links_reported = true;
  }
  if (complete && inst.consumed >= inst.arrivals.size()) instances_.erase(it);
  return out;
}

int32_t CollectiveMatcher::MostWaitedFor(const absl::flat_hash_map<uint32_t, int64_t>& waited) {
  int32_t waited_for = -1;
  int64_t most = 0;
  for (const auto& [r, w] : waited) {
    if (w > most || (w == most && waited_for >= 0 && static_cast<int32_t>(r) < waited_for)) {
      most = w;
      waited_for = static_cast<int32_t>(r);
    }
  }
  return waited_for;
}

void CollectiveMatcher::ForgetOlderThan(uint64_t closed_step, uint64_t retention_steps) {
  while (!order_.empty() && order_.front().first + retention_steps < closed_step) {
    instances_.erase(order_.front().second);
    order_.pop_front();
  }
}

}  // namespace trainscope::collector
