#include "trainscope/collector/analysis/rule_history.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

LateArrivalDetector::Options LateArrivalOptions(const v1::CollectiveWaitRule& rule) {
  LateArrivalDetector::Options o;
  o.reference = rule.late_arrival_reference();
  o.threshold = rule.late_arrival_threshold();
  o.cap = rule.late_arrival_cap();
  o.clear_steps = rule.late_arrival_clear_steps();
  o.frequency_ratio = rule.late_arrival_frequency_ratio();
  o.frequency_threshold = rule.late_arrival_frequency_threshold();
  o.min_margin = rule.late_arrival_min_margin();
  return o;
}

}  // namespace

std::vector<const v1::DeviceStep*> CompleteDevices(const v1::StepReport& step) {
  std::vector<const v1::DeviceStep*> out;
  for (const v1::DeviceStep& d : step.devices()) {
    if (d.complete()) out.push_back(&d);
  }
  return out;
}

RuleHistory::RuleHistory(const v1::RulesConfig& rules)
    : warmup_steps_(rules.warmup_steps()),
      window_steps_(rules.window_steps()),
      min_link_bytes_(rules.slow_link().min_bytes()),
      late_arrivals_(LateArrivalOptions(rules.collective_wait())) {
  history_size_ = std::max<size_t>(
      {rules.window_steps(), rules.straggler().window_steps(), rules.low_flops().window_steps(),
       rules.collective_wait().streak_steps(), rules.collective_wait().sustained_steps()});
}

void RuleHistory::OnStep(const v1::StepReport& step) {
  ++steps_seen_;
  if (in_warmup()) return;
  RecordDevices(step);
  RecordStages(step);
  RecordLinks(step);
  late_arrivals_.OnStep(step);
}

void RuleHistory::RecordDevices(const v1::StepReport& step) {
  const std::vector<const v1::DeviceStep*> devices = CompleteDevices(step);
  for (const v1::DeviceStep* d : devices) {
    if (d->step_time_ns() <= 0) continue;
    DeviceSample sample;
    sample.step = step.step();
    sample.stage = d->stage();
    sample.step_time = static_cast<double>(d->step_time_ns());
    sample.wait = static_cast<double>(d->wait_ns());
    sample.data_wait = static_cast<double>(d->data_wait_ns());
    sample.own = std::max(0.0, sample.step_time - sample.wait - sample.data_wait);
    sample.flops_per_second = d->flops() > 0 ? d->flops_per_second() : 0;
    sample.waited_for = d->waited_for_rank();
    std::vector<double> held;  // what each other device spent waiting for d
    for (const v1::DeviceStep* v : devices) {
      if (v == d || v->step_time_ns() <= 0) continue;
      const bool for_d = v->waited_for_rank() == static_cast<int32_t>(d->rank());
      held.push_back(for_d ? static_cast<double>(v->wait_ns()) / v->step_time_ns() : 0.0);
    }
    sample.held_up = Median(std::move(held));
    std::deque<DeviceSample>& window = devices_[d->rank()];
    window.push_back(sample);
    while (window.size() > history_size_) window.pop_front();
  }
  // Own time against the stage peers' of the same step (owns are final now).
  for (const v1::DeviceStep* d : devices) {
    auto it = devices_.find(d->rank());
    if (it == devices_.end() || it->second.back().step != step.step()) continue;
    DeviceSample& sample = it->second.back();
    std::vector<double> peers;
    for (const v1::DeviceStep* p : devices) {
      if (p == d || p->stage() != d->stage()) continue;
      auto peer = devices_.find(p->rank());
      if (peer != devices_.end() && peer->second.back().step == step.step()) {
        peers.push_back(peer->second.back().own);
      }
    }
    const double median = Median(std::move(peers));
    sample.own_ratio = median > 0 ? sample.own / median : 0;
  }
}

void RuleHistory::RecordStages(const v1::StepReport& step) {
  for (const v1::StageStep& s : step.stages()) {
    if (s.ranks_size() == 0) continue;
    StageSample sample;
    sample.step = step.step();
    sample.ranks.assign(s.ranks().begin(), s.ranks().end());
    sample.flops = static_cast<double>(s.flops());
    sample.compute = static_cast<double>(s.compute_ns());
    sample.bubble = static_cast<double>(s.bubble_ns());
    std::deque<StageSample>& window = stages_[s.stage()];
    window.push_back(std::move(sample));
    while (window.size() > history_size_) window.pop_front();
  }
  // Stages that left the report keep no stale window.
  for (auto it = stages_.begin(); it != stages_.end();) {
    it = it->second.back().step == step.step() ? std::next(it) : stages_.erase(it);
  }
}

void RuleHistory::RecordLinks(const v1::StepReport& step) {
  std::map<uint32_t, const v1::DeviceStep*> by_rank;
  for (const v1::DeviceStep* d : CompleteDevices(step)) by_rank[d->rank()] = d;
  // A collective link's duration runs from the collective's latest start
  // only when neither end waited long: where an endpoint waited longer than
  // it transferred, the duration measures the wait. A send/recv link's runs
  // from the later of its two ends' starts (CollectiveMatcher), so its ends'
  // waits elsewhere in the step (a pipeline stage waits on the other most of
  // its step) are not in it.
  auto dominated_by_waiting = [&](uint32_t rank) {
    auto it = by_rank.find(rank);
    return it == by_rank.end() || it->second->wait_ns() > it->second->transfer_ns();
  };
  for (const v1::LinkStep& l : step.links()) {
    LinkSample sample;
    sample.step = step.step();
    sample.type = l.link_type();
    sample.bytes = static_cast<double>(l.bytes());
    sample.bytes_per_second = l.bytes_per_second();
    sample.duration_ns = static_cast<double>(l.duration_ns());
    sample.step_ns = static_cast<double>(step.end_ns() - step.start_ns());
    const bool p2p = l.link_type() == "p2p";
    sample.usable =
        l.bytes() >= min_link_bytes_ && l.bytes_per_second() > 0 &&
        (p2p || (!dominated_by_waiting(l.src_rank()) && !dominated_by_waiting(l.dst_rank())));
    links_[LinkKey(l)].push_back(std::move(sample));
  }
  for (auto it = links_.begin(); it != links_.end();) {
    std::deque<LinkSample>& window = it->second;
    while (!window.empty() && window.front().step + window_steps_ <= step.step()) {
      window.pop_front();
    }
    it = window.empty() ? links_.erase(it) : std::next(it);
  }
}

const std::deque<DeviceSample>* RuleHistory::DeviceWindow(uint32_t rank) const {
  auto it = devices_.find(rank);
  return it == devices_.end() ? nullptr : &it->second;
}

const std::deque<LinkSample>* RuleHistory::LinkWindow(const std::string& key) const {
  auto it = links_.find(key);
  return it == links_.end() ? nullptr : &it->second;
}

std::string RuleHistory::LinkKey(const v1::LinkStep& link) {
  return absl::StrFormat("%s %010u %010u", link.link_type(), link.src_rank(), link.dst_rank());
}

}  // namespace trainscope::collector
