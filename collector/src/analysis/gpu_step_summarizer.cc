#include "trainscope/collector/analysis/gpu_step_summarizer.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

void GpuStepSummarizer::Begin() {
  for (IntervalSet* s : {&compute_, &nccl_, &h2d_, &d2h_, &other_copy_, &all_}) s->Clear();
  kernels_by_name_.clear();
  streams_.clear();
  waited_.clear();
  events_ = kernels_ = nccl_kernels_ = 0;
  flops_ = 0;
  wait_ = lateness_ = 0;
}

void GpuStepSummarizer::Add(const DeviceEvent& e, const OperatorRecord& op,
                            CollectiveMatcher::Links* links) {
  ++events_;
  streams_.insert(uint64_t{op.gpu_device} << 32 | op.gpu_stream);
  all_.Add(op.start_ns, op.end_ns);
  const int64_t duration = std::max<int64_t>(0, op.end_ns - op.start_ns);
  switch (e.kind) {
    case v1::EVENT_KIND_GPU_KERNEL:
    case v1::EVENT_KIND_GPU_COLLECTIVE: {
      ++kernels_;
      KernelTotals& k = kernels_by_name_[op.name];
      k.op_class = op.op_class;
      ++k.count;
      k.total_ns += duration;
      auto it = std::find_if(k.launch_ops.begin(), k.launch_ops.end(),
                             [&](const auto& p) { return p.first == op.launch_op; });
      if (it == k.launch_ops.end()) {
        k.launch_ops.emplace_back(op.launch_op, 1);
      } else {
        ++it->second;
      }
      if (e.kind == v1::EVENT_KIND_GPU_KERNEL) {
        compute_.Add(op.start_ns, op.end_ns);
        flops_ += e.value;
        break;
      }
      ++nccl_kernels_;
      nccl_.Add(op.start_ns, op.end_ns);
      if (matcher_ != nullptr) {
        const CollectiveMatcher::Wait w = matcher_->Match(op, links);
        lateness_ += w.lateness_ns;
        if (w.wait_ns > 0) {
          wait_ += w.wait_ns;
          waited_[w.waited_for] += w.wait_ns;
        }
      }
      break;
    }
    case v1::EVENT_KIND_GPU_MEMCPY:
      if (e.detail == v1::COPY_KIND_HOST_TO_DEVICE) {
        h2d_.Add(op.start_ns, op.end_ns);
      } else if (e.detail == v1::COPY_KIND_DEVICE_TO_HOST) {
        d2h_.Add(op.start_ns, op.end_ns);
      } else {
        other_copy_.Add(op.start_ns, op.end_ns);
      }
      break;
    default:  // memsets
      other_copy_.Add(op.start_ns, op.end_ns);
      break;
  }
}

void GpuStepSummarizer::Fill(uint32_t rank, int64_t start, int64_t end, const Host& host,
                             uint64_t host_flops, v1::DeviceStep* out) {
  for (IntervalSet* s : {&compute_, &nccl_, &h2d_, &d2h_, &other_copy_, &all_}) s->Normalize();
  const int64_t busy = compute_.Length();
  const int64_t collective = nccl_.Length();
  const int64_t wait = std::min(wait_, collective);

  // Idle: the window where no GPU work ran, this step's or an earlier one's.
  IntervalSet& spill = spill_[rank];
  IntervalSet work = all_;
  for (const IntervalSet::Interval& iv : spill.intervals()) work.Add(iv.start, iv.end);
  work.Normalize();
  IntervalSet idle = IntervalSet::Window(start, end).Minus(work);
  // Why, in this order: a sync call, a data wait, the host busy in operators.
  int64_t host_sync = 0, data_wait = 0, launch_bound = 0;
  if (host.syncs != nullptr) {
    const IntervalSet in_sync = idle.Intersect(*host.syncs);
    host_sync = in_sync.Length();
    idle = idle.Minus(in_sync);
  }
  const int64_t idle_total = IntervalSet::Window(start, end).Minus(work).Length();
  if (host.data_wait != nullptr) {
    const IntervalSet waiting = idle.Intersect(*host.data_wait);
    data_wait = waiting.Length();
    idle = idle.Minus(waiting);
  }
  if (host.operators != nullptr) launch_bound = idle.Intersect(*host.operators).Length();
  // What runs past the window's end is the next steps' spill-over.
  IntervalSet next_spill = work.Clip(end, std::numeric_limits<int64_t>::max());
  next_spill.Coarsen(kMaxSpillIntervals);
  spill = std::move(next_spill);

  out->set_has_gpu(true);
  out->set_gpu_busy_ns(busy);
  out->set_compute_ns(busy);
  out->set_idle_ns(idle_total);
  out->set_gpu_idle_host_sync_ns(host_sync);
  out->set_gpu_idle_data_wait_ns(data_wait);
  out->set_gpu_idle_launch_bound_ns(launch_bound);
  out->set_h2d_copy_ns(h2d_.Length());
  out->set_d2h_copy_ns(d2h_.Length());
  out->set_other_copy_ns(other_copy_.Length());
  out->set_comm_compute_overlap_ns(nccl_.Intersect(compute_).Length());
  IntervalSet host_copies = h2d_;
  for (const IntervalSet::Interval& iv : d2h_.intervals()) host_copies.Add(iv.start, iv.end);
  host_copies.Normalize();
  out->set_copy_stall_ns(host_copies.Minus(compute_).Length());
  out->set_kernels(kernels_);
  out->set_gpu_streams(static_cast<uint32_t>(streams_.size()));
  const uint64_t flops = flops_ > 0 ? flops_ : host_flops;
  out->set_flops(flops);
  out->set_flops_per_second(busy > 0 ? static_cast<double>(flops) * 1e9 / static_cast<double>(busy)
                                     : 0.0);
  if (nccl_kernels_ > 0) {
    // The device's own collectives say how long it communicated, who it
    // waited for and how late it was; its host's (asynchronous) calls do
    // not. Without NCCL kernels (gloo beside GPU compute, say) the host's
    // collective figures stand.
    out->set_collective_ns(collective);
    out->set_wait_ns(wait);
    out->set_transfer_ns(collective - wait);
    out->set_waited_for_rank(CollectiveMatcher::MostWaitedFor(waited_));
    out->set_lateness_ns(lateness_);
  }
  out->clear_top_kernels();
  FillTopKernels(out);
}

void GpuStepSummarizer::FillTopKernels(v1::DeviceStep* out) const {
  std::vector<std::pair<uint32_t, const KernelTotals*>> top;
  top.reserve(kernels_by_name_.size());
  for (const auto& [name, k] : kernels_by_name_) top.emplace_back(name, &k);
  const size_t n = std::min(kTopKernels, top.size());
  // Longest total first; ties by name id, so that the order is stable.
  auto longer = [](const auto& a, const auto& b) {
    return a.second->total_ns != b.second->total_ns ? a.second->total_ns > b.second->total_ns
                                                    : a.first < b.first;
  };
  std::partial_sort(top.begin(), top.begin() + static_cast<ptrdiff_t>(n), top.end(), longer);
  for (size_t i = 0; i < n; ++i) {
    const KernelTotals& k = *top[i].second;
    v1::KernelSummary* s = out->add_top_kernels();
    if (strings_ != nullptr) s->set_name(std::string(strings_->Get(top[i].first)));
    s->set_op_class(k.op_class);
    s->set_count(k.count);
    s->set_total_ns(k.total_ns);
    uint32_t launch_op = 0, most = 0;
    for (const auto& [op, count] : k.launch_ops) {
      if (count > most || (count == most && op < launch_op)) {
        launch_op = op;
        most = count;
      }
    }
    if (strings_ != nullptr && launch_op != 0) {
      s->set_launch_op(std::string(strings_->Get(launch_op)));
    }
  }
}

}  // namespace trainscope::collector
