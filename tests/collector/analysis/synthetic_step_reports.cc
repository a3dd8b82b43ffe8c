#include "synthetic_step_reports.h"

#include <algorithm>
#include <memory>

#include "trainscope/collector/analysis/rule_history.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector::testing {

v1::StepReport SyntheticJob::Step(uint64_t step) {
  v1::StepReport report;
  report.set_step(step);
  const int64_t base_compute = 40 * kMs;
  std::vector<double> data(ranks_), compute(ranks_), arrival(ranks_);
  std::vector<bool> present(ranks_, true);
  for (uint32_t r = 0; r < ranks_; ++r) {
    if (killed_rank == static_cast<int>(r) && step >= killed_from) present[r] = false;
    data[r] = 1 * kMs * Noise();
    if (stall.Active(step) && (stall_rank == -2 || stall_rank == static_cast<int>(r))) {
      data[r] += static_cast<double>(stall_ns) * Noise();
    }
    double factor = Noise();
    if (spike_(rng_) < 0.01) factor *= std::uniform_real_distribution<double>(1.1, 1.6)(rng_);
    if (slow.Active(step) && slow_rank == static_cast<int>(r)) factor *= slow_factor;
    if (imbalance.Active(step) && StageOf(r) == heavy_stage) factor *= heavy_factor;
    compute[r] = static_cast<double>(base_compute) * factor;
    arrival[r] = data[r] + compute[r];
  }
  // The all-reduce starts when the last present rank arrives.
  uint32_t last = 0;
  double last_arrival = -1;
  double first_arrival = -1;
  for (uint32_t r = 0; r < ranks_; ++r) {
    if (present[r] && arrival[r] > last_arrival) {
      last_arrival = arrival[r];
      last = r;
    }
    if (present[r] && (first_arrival < 0 || arrival[r] < first_arrival)) {
      first_arrival = arrival[r];
    }
  }
  const double link_ns = 0.5 * kMs;
  double transfer = 4 * kMs * Noise();
  if (slow_link.Active(step)) transfer += static_cast<double>(link_extra_ns);
  const double optimizer = 3 * kMs * Noise();
  const double step_time = last_arrival + transfer + optimizer;
  std::vector<double> stage_compute(stages_), stage_bubble(stages_);
  std::vector<uint32_t> stage_devices(stages_);
  std::vector<uint64_t> stage_flops(stages_);
  for (uint32_t r = 0; r < ranks_; ++r) {
    if (!present[r]) {
      report.add_missing_ranks(r);
      continue;
    }
    v1::DeviceStep* d = report.add_devices();
    d->set_step(step);
    d->set_rank(r);
    d->set_stage(StageOf(r));
    d->set_complete(true);
    d->set_step_time_ns(static_cast<int64_t>(step_time));
    d->set_data_wait_ns(static_cast<int64_t>(data[r]));
    d->set_compute_ns(static_cast<int64_t>(compute[r]));
    d->set_forward_ns(static_cast<int64_t>(compute[r] / 3));
    d->set_backward_ns(static_cast<int64_t>(compute[r] * 2 / 3));
    d->set_optimizer_ns(static_cast<int64_t>(optimizer));
    const double wait = last_arrival - arrival[r];
    d->set_wait_ns(static_cast<int64_t>(wait));
    d->set_transfer_ns(static_cast<int64_t>(transfer));
    d->set_collective_ns(static_cast<int64_t>(wait + transfer));
    d->set_waited_for_rank(wait > 0 ? static_cast<int32_t>(last) : -1);
    d->set_collectives(1);
    d->set_lateness_ns(static_cast<int64_t>(arrival[r] - first_arrival));
    // FLOPs follow the work: an overloaded stage does more of it.
    double work = 1;
    if (imbalance.Active(step) && StageOf(r) == heavy_stage) work = heavy_factor;
    const uint64_t flops = static_cast<uint64_t>(4e12 * 0.04 * work);
    d->set_flops(flops);
    d->set_flops_per_second(static_cast<double>(flops) / (compute[r] / 1e9));
    const uint32_t s = StageOf(r);
    stage_compute[s] += compute[r];
    stage_bubble[s] += wait;
    stage_flops[s] += flops;
    ++stage_devices[s];
  }
  // Ring links r -> r+1 carrying the all-reduce.
  for (uint32_t r = 0; r < ranks_; ++r) {
    const uint32_t dst = (r + 1) % ranks_;
    if (!present[r] || !present[dst]) continue;
    v1::LinkStep* l = report.add_links();
    l->set_step(step);
    l->set_src_rank(r);
    l->set_dst_rank(dst);
    l->set_link_type("collective");
    l->set_bytes(1 << 20);
    double duration = link_ns * Noise();
    if (slow_link.Active(step) && r == link_src && dst == link_dst) {
      duration += static_cast<double>(link_extra_ns);
    }
    l->set_duration_ns(static_cast<int64_t>(duration));
    l->set_bytes_per_second(static_cast<double>(l->bytes()) / (duration / 1e9));
    l->set_transfers(2);
  }
  if (stages_ > 1) {
    for (uint32_t s = 0; s < stages_; ++s) {
      if (stage_devices[s] == 0) continue;
      v1::StageStep* st = report.add_stages();
      st->set_step(step);
      st->set_stage(s);
      for (uint32_t r = 0; r < ranks_; ++r) {
        if (present[r] && StageOf(r) == s) st->add_ranks(r);
      }
      st->set_flops(stage_flops[s]);
      st->set_compute_ns(static_cast<int64_t>(stage_compute[s] / stage_devices[s]));
      st->set_bubble_ns(static_cast<int64_t>(stage_bubble[s] / stage_devices[s]));
    }
  }
  return report;
}

double SyntheticJob::Noise() { return std::max(0.5, noise_(rng_)); }

std::map<uint64_t, std::vector<RuleVerdict>> RunRule(
    SyntheticJob& job, AlertRuleFactory make, const v1::RulesConfig& rules, uint64_t steps,
    const std::function<void(v1::StepReport*)>& edit) {
  const v1::RulesConfig filled = WithDefaults(rules);
  RuleHistory history(filled);
  std::unique_ptr<AlertRule> rule = make(filled);
  std::map<uint64_t, std::vector<RuleVerdict>> out;
  for (uint64_t s = 1; s <= steps; ++s) {
    v1::StepReport report = job.Step(s);
    if (edit) edit(&report);
    history.OnStep(report);
    if (history.in_warmup() || rule == nullptr) continue;
    out[s] = rule->Evaluate(report, history);
  }
  return out;
}

std::set<std::string> Holding(const std::vector<RuleVerdict>& verdicts) {
  std::set<std::string> out;
  for (const RuleVerdict& v : verdicts) {
    if (v.holds) out.insert(v.subject);
  }
  return out;
}

}  // namespace trainscope::collector::testing
