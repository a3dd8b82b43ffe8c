#include "trainscope/collector/analysis/step_report_builder.h"

#include <algorithm>
#include <string>
#include <utility>

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

void StepReportBuilder::AddDevice(v1::DeviceStep&& device) {
  start_ns_ = std::min(start_ns_, device.start_ns());
  end_ns_ = std::max(end_ns_, device.end_ns());
  StageTotals& st = stages_[device.stage()];
  st.ranks.push_back(device.rank());
  st.flops += device.flops();
  st.compute_ns += device.compute_ns();
  st.bubble_ns += device.idle_ns() + device.wait_ns();
  *report_.add_devices() = std::move(device);
}

v1::StepReport StepReportBuilder::Build() && {
  const uint64_t step = report_.step();
  if (report_.devices_size() > 0) {
    report_.set_start_ns(start_ns_);
    report_.set_end_ns(end_ns_);
  }
  for (const auto& [key, t] : links_) {
    v1::LinkStep* l = report_.add_links();
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
  for (const auto& [key, t] : links_.traffic) {
    v1::PairTraffic* p = report_.add_traffic();
    p->set_step(step);
    p->set_src_rank(key.src);
    p->set_dst_rank(key.dst);
    if (strings_ != nullptr) p->set_group(std::string(strings_->Get(key.group)));
    p->set_backend(TrafficModel::BackendName(t.backend));
    p->set_exact(key.exact);
    p->set_bytes(t.bytes);
    p->set_messages(t.messages);
    p->set_duration_ns(t.duration_ns);
  }
  for (const auto& [stage, t] : stages_) {
    v1::StageStep* s = report_.add_stages();
    const int64_t n = static_cast<int64_t>(t.ranks.size());
    s->set_step(step);
    s->set_stage(stage);
    for (uint32_t r : t.ranks) s->add_ranks(r);
    s->set_flops(t.flops);
    s->set_compute_ns(t.compute_ns / n);
    s->set_bubble_ns(t.bubble_ns / n);
  }
  return std::move(report_);
}

}  // namespace trainscope::collector
