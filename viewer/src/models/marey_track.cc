#include "trainscope/viewer/marey_track.h"

namespace trainscope::viewer {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Steps come in order: past this many (step, name) slots, the numbering of
// steps long closed is forgotten.
constexpr size_t kMaxOccurrenceSlots = 200'000;

}  // namespace

uint64_t MareyTrack::MixKey(uint64_t h, uint64_t v) { return SplitMix(h ^ SplitMix(v)); }

MareyTrack::Op MareyTrack::Add(const OperatorRecord& record) {
  if (!raw_base_set) {
    raw_base = record.raw_start_ns - record.start_ns;
    raw_base_set = true;
  }
  Op op;
  op.start = record.start_ns;
  op.end = std::max(record.end_ns, record.start_ns);
  op.raw_delta = static_cast<int32_t>(
      std::clamp<int64_t>(record.raw_start_ns - record.start_ns - raw_base, INT32_MIN, INT32_MAX));
  op.name = record.name;
  op.step = static_cast<uint32_t>(record.step);
  op.cls = record.op_class;
  switch (record.op_class) {
    case OpClass::kSend:
      op.key = MixKey(
          MixKey(MixKey(MixKey(3, record.group), record.rank), static_cast<uint64_t>(record.peer)),
          record.group_sequence);
      break;
    case OpClass::kRecv:
      op.key = MixKey(
          MixKey(MixKey(MixKey(3, record.group), static_cast<uint64_t>(record.peer)), record.rank),
          record.group_sequence);
      break;
    case OpClass::kCollective:
      if (record.group_sequence != 0) {
        op.key = MixKey(MixKey(MixKey(2, record.group), record.group_sequence), record.name);
        break;
      }
      [[fallthrough]];
    case OpClass::kGpuCollective:
      // One collective's NCCL kernels: same group and sequence on every
      // device (kernel names may differ by algorithm and protocol).
      if (record.op_class == OpClass::kGpuCollective && record.group_sequence != 0) {
        op.key = MixKey(MixKey(4, record.group), record.group_sequence);
        break;
      }
      [[fallthrough]];
    case OpClass::kCompute:
    case OpClass::kGpuKernel:
    case OpClass::kGpuCopy: {
      const uint64_t slot = MixKey(record.step, record.name);
      const uint32_t occurrence = occurrences[slot]++;
      op.key = MixKey(MixKey(MixKey(1, record.step), record.name), occurrence);
      if (record.step > newest_step) newest_step = record.step;
      break;
    }
  }
  if (occurrences.size() > kMaxOccurrenceSlots) occurrences.clear();
  Push(op);
  return op;
}

void MareyTrack::Push(const Op& op) {
  std::vector<Op>& ops = IsMergeable(op.cls) ? compute : comm;
  ops.push_back(op);
  dirty = true;
}

void MareyTrack::BuildFineEdges() {
  fine.clear();
  fine_ns = 0;
  if (compute.size() < kMinOpsForFineEdges) return;
  fine_origin = compute.front().start;
  const int64_t span = compute.back().start - fine_origin + 1;
  const size_t n = compute.size() / kOpsPerFineEdge;
  fine_ns = std::max<int64_t>(1, span / static_cast<int64_t>(n));
  fine.resize(static_cast<size_t>(span / fine_ns) + 2);
  size_t j = 0;
  for (size_t i = 0; i < fine.size(); ++i) {
    const int64_t t = fine_origin + static_cast<int64_t>(i) * fine_ns;
    while (j < compute.size() && compute[j].start < t) ++j;
    FineEdge& e = fine[i];
    e.index = j;
    e.busy = busy_prefix[j];
    e.next_start = j < compute.size() ? compute[j].start : INT64_MAX;
    e.prev_end = j > 0 ? compute[j - 1].end : INT64_MIN;
  }
}

void MareyTrack::Prepare() {
  if (!dirty) return;
  auto by_start = [](const Op& a, const Op& b) { return a.start < b.start; };
  if (!std::is_sorted(compute.begin(), compute.end(), by_start)) {
    std::stable_sort(compute.begin(), compute.end(), by_start);
  }
  if (!std::is_sorted(comm.begin(), comm.end(), by_start)) {
    std::stable_sort(comm.begin(), comm.end(), by_start);
  }
  busy_prefix.resize(compute.size() + 1);
  busy_prefix[0] = 0;
  max_compute = 0;
  for (size_t i = 0; i < compute.size(); ++i) {
    const int64_t d = std::max<int64_t>(0, compute[i].end - compute[i].start);
    busy_prefix[i + 1] = busy_prefix[i] + d;
    max_compute = std::max(max_compute, d);
  }
  BuildFineEdges();
  max_comm = 0;
  comm_spans.resize(comm.size());
  comm_busy_prefix.resize(comm.size() + 1);
  comm_busy_prefix[0] = 0;
  for (size_t j = 0; j < comm.size(); ++j) {
    const int64_t d = std::max<int64_t>(0, comm[j].end - comm[j].start);
    comm_busy_prefix[j + 1] = comm_busy_prefix[j] + d;
    max_comm = std::max(max_comm, d);
    comm_spans[j] = {comm[j].start, static_cast<int32_t>(std::min<int64_t>(d, INT32_MAX)),
                     comm[j].cls};
  }
  const size_t blocks = comm.size() / kBlock;
  block_start.assign(blocks, INT64_MAX);
  block_end.assign(blocks, INT64_MIN);
  block_raw_low.assign(blocks, INT32_MAX);
  block_raw_high.assign(blocks, INT32_MIN);
  block_class.assign(blocks, OpClass::kCollective);
  for (size_t b = 0; b < blocks; ++b) {
    block_class[b] = comm[b * kBlock].cls;
    for (size_t j = b * kBlock; j < (b + 1) * kBlock; ++j) {
      block_start[b] = std::min(block_start[b], comm[j].start);
      block_end[b] = std::max(block_end[b], comm[j].end);
      block_raw_low[b] = std::min(block_raw_low[b], comm[j].raw_delta);
      block_raw_high[b] = std::max(block_raw_high[b], comm[j].raw_delta);
    }
  }
  dirty = false;
}

}  // namespace trainscope::viewer
