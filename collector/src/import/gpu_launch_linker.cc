#include "trainscope/collector/import/gpu_launch_linker.h"

namespace trainscope::collector {

void GpuLaunchLinker::OnFlow(const SortedTraceEvent& flow) {
  if (flow.flow_id == 0) return;
  ++flows_;
  // Only the latest per place matters: flows sort before the events of the
  // same time, and a launch or kernel looks up its own time only.
  flows_at_[{flow.pid, flow.tid}] = {flow.ts_ns, flow.flow_id};
}

uint64_t GpuLaunchLinker::CorrelationOf(const SortedTraceEvent& e) const {
  if (e.has_correlation && e.correlation != 0) return e.correlation;
  auto it = flows_at_.find(std::make_pair(e.pid, e.tid));
  if (it != flows_at_.end() && it->second.first == e.ts_ns) return it->second.second;
  return 0;
}

void GpuLaunchLinker::AddLaunch(uint64_t correlation, const Launch& launch) {
  if (correlation == 0) return;
  ++launches_;
  auto [it, added] = launches_by_id_.insert_or_assign(correlation, launch);
  if (!added) return;
  order_.push_back(correlation);
  while (order_.size() > capacity_) {
    launches_by_id_.erase(order_.front());
    order_.pop_front();
    ++forgotten_;
  }
}

GpuLaunchLinker::Launch* GpuLaunchLinker::Find(uint64_t correlation) {
  if (correlation == 0) return nullptr;
  auto it = launches_by_id_.find(correlation);
  return it == launches_by_id_.end() ? nullptr : &it->second;
}

}  // namespace trainscope::collector
