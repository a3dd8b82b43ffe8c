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
  if (record.op_class == OpClass::kSend || record.op_class == OpClass::kRecv) {
    op.set_peer(record.peer);
  }
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

void MareyTrack::BuildFineEdges(size_t appended_from) {
  if (compute.size() < kMinOpsForFineEdges) {
    fine.clear();
    fine_ns = 0;
    return;
  }
  const size_t target = compute.size() / kOpsPerFineEdge;
  // Appending keeps the grid while it still holds about kOpsPerFineEdge
  // operators per entry (a steady job adds time and operators alike), so a
  // live frame extends the index instead of rebuilding it.
  size_t from = 0;
  if (appended_from > 0 && fine_ns > 0 && !fine.empty() && fine.size() <= 2 * target &&
      2 * fine.size() >= target) {
    // Entries at or before the first new start count the same operators.
    const int64_t first_new = compute[appended_from].start;
    const int64_t i = (first_new - fine_origin) / fine_ns;
    from = static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(fine.size())));
    // Entries past the old operators name none as their next start yet.
    while (from > 0 && fine[from - 1].index >= appended_from) --from;
  } else {
    fine_origin = compute.front().start;
    const int64_t span = compute.back().start - fine_origin + 1;
    fine_ns = std::max<int64_t>(1, span / static_cast<int64_t>(target));
  }
  const int64_t span = compute.back().start - fine_origin + 1;
  fine.resize(static_cast<size_t>(span / fine_ns) + 2);
  size_t j = from > 0 ? fine[from - 1].index : 0;
  for (size_t i = from; i < fine.size(); ++i) {
    const int64_t t = fine_origin + static_cast<int64_t>(i) * fine_ns;
    while (j < compute.size() && compute[j].start < t) ++j;
    FineEdge& e = fine[i];
    e.index = j;
    e.busy = busy_prefix[j];
    e.next_start = j < compute.size() ? compute[j].start : INT64_MAX;
    e.prev_end = j > 0 ? compute[j - 1].end : INT64_MIN;
  }
}

void MareyTrack::Invalidate() {
  dirty = true;
  prepared_compute_ = 0;
  prepared_comm_ = 0;
}

void MareyTrack::Prepare() {
  if (!dirty) return;
  auto by_start = [](const Op& a, const Op& b) { return a.start < b.start; };
  // Operators appended in time order after the prepared ones (a live job's
  // newest step) extend the indexes; anything else rebuilds them.
  auto appended = [&](const std::vector<Op>& ops, size_t prepared) -> size_t {
    if (prepared == 0 || prepared > ops.size()) return 0;
    if (prepared < ops.size() && ops[prepared].start < ops[prepared - 1].start) return 0;
    return std::is_sorted(ops.begin() + static_cast<std::ptrdiff_t>(prepared), ops.end(), by_start)
               ? prepared
               : 0;
  };
  size_t compute_from = appended(compute, prepared_compute_);
  size_t comm_from = appended(comm, prepared_comm_);
  if (compute_from == 0 && !std::is_sorted(compute.begin(), compute.end(), by_start)) {
    std::stable_sort(compute.begin(), compute.end(), by_start);
  }
  if (comm_from == 0 && !std::is_sorted(comm.begin(), comm.end(), by_start)) {
    std::stable_sort(comm.begin(), comm.end(), by_start);
  }
  if (compute_from == 0) {
    busy_prefix.assign(1, 0);
    max_compute = 0;
  }
  busy_prefix.resize(compute.size() + 1);
  for (size_t i = compute_from; i < compute.size(); ++i) {
    const int64_t d = std::max<int64_t>(0, compute[i].end - compute[i].start);
    busy_prefix[i + 1] = busy_prefix[i] + d;
    max_compute = std::max(max_compute, d);
  }
  if (compute_from < compute.size() || compute_from == 0) BuildFineEdges(compute_from);
  if (comm_from == 0) {
    comm_busy_prefix.assign(1, 0);
    max_comm = 0;
  }
  comm_spans.resize(comm.size());
  comm_busy_prefix.resize(comm.size() + 1);
  for (size_t j = comm_from; j < comm.size(); ++j) {
    const int64_t d = std::max<int64_t>(0, comm[j].end - comm[j].start);
    comm_busy_prefix[j + 1] = comm_busy_prefix[j] + d;
    max_comm = std::max(max_comm, d);
    comm_spans[j] = {comm[j].start, static_cast<int32_t>(std::min<int64_t>(d, INT32_MAX)),
                     comm[j].cls};
  }
  const size_t blocks = comm.size() / kBlock;
  const size_t first_block = std::min(comm_from / kBlock, block_start.size());
  block_start.resize(blocks);
  block_end.resize(blocks);
  block_raw_low.resize(blocks);
  block_raw_high.resize(blocks);
  block_class.resize(blocks);
  for (size_t b = first_block; b < blocks; ++b) {
    block_start[b] = INT64_MAX;
    block_end[b] = INT64_MIN;
    block_raw_low[b] = INT32_MAX;
    block_raw_high[b] = INT32_MIN;
    block_class[b] = comm[b * kBlock].cls;
    for (size_t j = b * kBlock; j < (b + 1) * kBlock; ++j) {
      block_start[b] = std::min(block_start[b], comm[j].start);
      block_end[b] = std::max(block_end[b], comm[j].end);
      block_raw_low[b] = std::min(block_raw_low[b], comm[j].raw_delta);
      block_raw_high[b] = std::max(block_raw_high[b], comm[j].raw_delta);
    }
  }
  prepared_compute_ = compute.size();
  prepared_comm_ = comm.size();
  dirty = false;
}

}  // namespace trainscope::viewer
