#include "trainscope/viewer/marey_track.h"

namespace trainscope::viewer {

void MareyTrack::Push(const Op& op) {
  std::vector<Op>& ops = op.cls == OpClass::kCompute ? compute : comm;
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
  for (size_t j = 0; j < comm.size(); ++j) {
    const int64_t d = std::max<int64_t>(0, comm[j].end - comm[j].start);
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
