#include "trainscope/collector/analysis/device_step_summarizer.h"

#include <algorithm>
#include <limits>

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

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

}  // namespace

int64_t DeviceStepSummarizer::Covered(std::vector<Interval>& v) {
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

void DeviceStepSummarizer::Summarize(uint32_t rank, uint32_t stage, uint64_t step,
                                     const DeviceStepBuffer& b, v1::DeviceStep* out,
                                     std::vector<OperatorRecord>* ops,
                                     CollectiveMatcher::Links* links) {
  const Tally tally = Align(rank, stage, step, b, ops, links);
  Fill(rank, stage, step, b, tally, out);
}

DeviceStepSummarizer::Tally DeviceStepSummarizer::Align(uint32_t rank, uint32_t stage,
                                                        uint64_t step, const DeviceStepBuffer& b,
                                                        std::vector<OperatorRecord>* ops,
                                                        CollectiveMatcher::Links* links) {
  compute_.clear();
  communication_.clear();
  all_.clear();
  forward_.clear();
  backward_.clear();
  waited_.clear();
  gpu_.Begin();
  // With NCCL kernels, the device's collectives are those kernels: its host
  // calls still consume their instances, but their links would count the
  // same transfers twice.
  CollectiveMatcher::Links* cpu_links = links;
  if (b.gpu_collectives > 0) {
    host_links_.clear();
    cpu_links = &host_links_;
  }
  Tally t;
  // The host's operators first, then the GPU work (arrived later, sorted by
  // start among itself), merged below into one nearly start-ordered run: the
  // OperatorStore sorts each rank's run cheaply only when it nearly is.
  const size_t first = ops->size();
  size_t gpu_first = first;
  bool any_gpu = false;
  for (const bool gpu_pass : {false, true}) {
    if (gpu_pass) gpu_first = ops->size();
    if (gpu_pass && !any_gpu) break;
    for (const DeviceEvent& e : b.events) {
      if (e.IsGpu() != gpu_pass) {
        any_gpu = true;  // (in the first pass)
        continue;
      }
      OperatorRecord& op = ops->emplace_back();
      op.raw_start_ns = e.start_ns;
      op.raw_end_ns = e.end_ns;
      op.start_ns = clock_->ToReference(rank, e.start_ns);
      op.end_ns = clock_->ToReference(rank, e.end_ns);
      op.step = step;
      op.rank = rank;
      op.name = e.name;
      op.thread = e.thread;
      op.stage = stage;
      if (e.IsGpu()) {
        // Device work: a GPU stream's operator for the store and the views;
        // its figures are device time (GpuStepSummarizer), not the host's
        // intervals below.
        op.op_class = OperatorRecord::GpuClassOf(e.kind);
        op.thread = 0;
        op.gpu_device = e.gpu_device;
        op.gpu_stream = e.gpu_stream;
        op.launch_op = e.launch_op;
        op.correlation = e.correlation;
        if (e.kind == v1::EVENT_KIND_GPU_KERNEL) {
          op.flops = e.value;
        } else {
          op.bytes = e.value;
          op.group = e.group;
          op.group_sequence = e.group_sequence;
          op.peer = e.peer;
          if (e.kind == v1::EVENT_KIND_GPU_COLLECTIVE) {
            op.collective_kind = static_cast<v1::CollectiveKind>(e.detail);
          }
        }
        gpu_.Add(e, op, links);
        continue;
      }
      t.first_start = std::min(t.first_start, op.start_ns);
      t.last_end = std::max(t.last_end, op.end_ns);
      const Interval iv{op.start_ns, op.end_ns};
      all_.push_back(iv);
      if (e.kind == v1::EVENT_KIND_OPERATOR) {
        op.op_class = v1::OPERATOR_CLASS_COMPUTE;
        op.op_sequence = e.value;
        op.flops = e.group_sequence;  // see DeviceStepBuffer::events
        op.scope = static_cast<v1::OperatorScope>(e.detail);
        ++t.operators;
        compute_.push_back(iv);
        if (e.detail == v1::OPERATOR_SCOPE_FORWARD) forward_.push_back(iv);
        if (e.detail == v1::OPERATOR_SCOPE_BACKWARD) backward_.push_back(iv);
      } else {
        op.op_class = ClassOf(e.detail);
        op.collective_kind = static_cast<v1::CollectiveKind>(e.detail);
        op.bytes = e.value;
        op.group = e.group;
        op.group_sequence = e.group_sequence;
        op.peer = e.peer;
        ++t.collectives;
        communication_.push_back(iv);
        const CollectiveMatcher::Wait w = matcher_->Match(op, cpu_links);
        t.lateness += w.lateness_ns;
        if (w.wait_ns > 0) {
          t.wait += w.wait_ns;
          waited_[w.waited_for] += w.wait_ns;
        }
      }
    }
  }
  if (gpu_first > first && gpu_first < ops->size()) {
    std::inplace_merge(
        ops->begin() + static_cast<ptrdiff_t>(first),
        ops->begin() + static_cast<ptrdiff_t>(gpu_first), ops->end(),
        [](const OperatorRecord& a, const OperatorRecord& c) { return a.start_ns < c.start_ns; });
  }
  return t;
}

void DeviceStepSummarizer::Fill(uint32_t rank, uint32_t stage, uint64_t step,
                                const DeviceStepBuffer& b, const Tally& t, v1::DeviceStep* out) {
  const bool any = !b.events.empty();
  int64_t start =
      b.has_start ? clock_->ToReference(rank, b.start_raw_ns) : (any ? t.first_start : 0);
  int64_t end =
      b.ended ? clock_->ToReference(rank, b.end_raw_ns) : std::max(start, any ? t.last_end : start);
  // A step without a start mark (before a device's first mark) starts at its
  // first operator, which an event of another thread may place after the
  // mark that ended it: the step is then empty, never negative.
  start = std::min(start, end);
  const int64_t step_time = std::max<int64_t>(0, end - start);
  // Clip to the step: an operator may straddle a mark.
  for (std::vector<Interval>* v : {&compute_, &communication_, &all_, &forward_, &backward_}) {
    for (Interval& iv : *v) {
      iv.start = std::clamp(iv.start, start, end);
      iv.end = std::clamp(iv.end, start, end);
    }
  }
  const int64_t compute = Covered(compute_);
  const int64_t communication = Covered(communication_);
  const int64_t busy = Covered(all_);

  out->set_step(step);
  out->set_rank(rank);
  out->set_stage(stage);
  out->set_start_ns(start);
  out->set_end_ns(end);
  out->set_step_time_ns(step_time);
  int64_t data_wait = 0;
  if (b.phase_seen[v1::PHASE_DATA_WAIT]) {
    data_wait = b.phase_ns[v1::PHASE_DATA_WAIT];
  } else if (any && b.has_start) {
    data_wait = std::clamp<int64_t>(t.first_start - start, 0, step_time);
  }
  out->set_data_wait_ns(data_wait);
  out->set_forward_ns(b.phase_seen[v1::PHASE_FORWARD] ? b.phase_ns[v1::PHASE_FORWARD]
                                                      : Covered(forward_));
  out->set_backward_ns(b.phase_seen[v1::PHASE_BACKWARD] ? b.phase_ns[v1::PHASE_BACKWARD]
                                                        : Covered(backward_));
  out->set_optimizer_ns(b.phase_ns[v1::PHASE_OPTIMIZER]);
  out->set_compute_ns(compute);
  out->set_collective_ns(communication);
  const int64_t wait = std::min(t.wait, communication);
  out->set_wait_ns(wait);
  out->set_transfer_ns(communication - wait);
  out->set_idle_ns(std::max<int64_t>(0, step_time - busy));
  out->set_flops(b.flops);
  out->set_flops_per_second(
      compute > 0 ? static_cast<double>(b.flops) * 1e9 / static_cast<double>(compute) : 0.0);
  out->set_peak_memory_bytes(b.peak_memory);
  out->set_operators(t.operators);
  out->set_collectives(t.collectives);
  out->set_waited_for_rank(CollectiveMatcher::MostWaitedFor(waited_));
  out->set_lateness_ns(t.lateness);
  out->set_complete(b.ended);
  out->set_cpu_compute_ns(compute);
  out->set_cpu_collective_ns(communication);
  if (gpu_.any()) FillGpu(rank, start, end, b, t, out);
}

void DeviceStepSummarizer::FillGpu(uint32_t rank, int64_t start, int64_t end,
                                   const DeviceStepBuffer& b, const Tally& t, v1::DeviceStep* out) {
  host_operators_.Clear();
  for (const Interval& iv : all_) host_operators_.Add(iv.start, iv.end);
  host_operators_.Normalize();
  host_syncs_.Clear();
  for (const DeviceStepBuffer::RawInterval& iv : b.host_syncs) {
    host_syncs_.Add(clock_->ToReference(rank, iv.start_ns), clock_->ToReference(rank, iv.end_ns));
  }
  host_syncs_.Normalize();
  // The data wait's intervals: its phases, else the time before the first
  // operator (as data_wait_ns reads it).
  host_data_wait_.Clear();
  if (b.phase_seen[v1::PHASE_DATA_WAIT]) {
    for (const DeviceStepBuffer::RawInterval& iv : b.data_waits) {
      host_data_wait_.Add(clock_->ToReference(rank, iv.start_ns),
                          clock_->ToReference(rank, iv.end_ns));
    }
  } else if (b.has_start && t.operators + t.collectives > 0) {
    host_data_wait_.Add(start, std::min(t.first_start, end));
  }
  host_data_wait_.Normalize();
  gpu_.Fill(rank, start, end,
            GpuStepSummarizer::Host{&host_operators_, &host_syncs_, &host_data_wait_}, b.flops,
            out);
}

}  // namespace trainscope::collector
