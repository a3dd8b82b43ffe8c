// slow_kernels: a GPU whose kernels run slower than its stage peers' for the
// same kernels (a throttled, misconfigured or failing device: the same code
// runs the same kernels on every data-parallel rank). Per kernel name the
// device shares with a peer (DeviceStep.top_kernels), its mean kernel time
// over the peers' median mean; the device's slowdown is the median of those
// ratios over its names, and it holds at 1 + SlowKernelsRule.slower_by on
// at least min_kernels names. Waiting does not enter it: an NCCL kernel
// that waits for a late peer is slow for the peer's sake, so only compute
// kernels are compared.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

class SlowKernelsRule : public AlertRule {
 public:
  explicit SlowKernelsRule(const v1::SlowKernelsRule& rule) : rule_(rule) {}

  absl::string_view name() const override { return kRuleSlowKernels; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step, const RuleHistory&) override {
    // Per stage, per kernel name: each device's mean kernel time.
    using Means = std::map<std::string, std::map<uint32_t, double>>;
    std::map<uint32_t, Means> by_stage;
    std::map<uint32_t, const v1::DeviceStep*> devices;
    for (const v1::DeviceStep* d : CompleteDevices(step)) {
      if (!d->has_gpu()) continue;
      devices[d->rank()] = d;
      for (const v1::KernelSummary& k : d->top_kernels()) {
        if (k.op_class() != v1::OPERATOR_CLASS_GPU_KERNEL || k.count() == 0 || k.name().empty()) {
          continue;
        }
        by_stage[d->stage()][k.name()][d->rank()] =
            static_cast<double>(k.total_ns()) / static_cast<double>(k.count());
      }
    }
    std::vector<RuleVerdict> out;
    for (const auto& [stage, means] : by_stage) {
      // Per device: its ratio to its peers on each shared name.
      std::map<uint32_t, std::vector<double>> ratios;
      for (const auto& [kernel, by_rank] : means) {
        if (by_rank.size() < 2) continue;
        for (const auto& [rank, mean] : by_rank) {
          std::vector<double> peers;
          for (const auto& [peer, peer_mean] : by_rank) {
            if (peer != rank) peers.push_back(peer_mean);
          }
          const double peer_median = Median(std::move(peers));
          if (peer_median > 0) ratios[rank].push_back(mean / peer_median);
        }
      }
      for (auto& [rank, r] : ratios) {
        const size_t shared = r.size();
        const double slowdown = Median(std::move(r));
        const double threshold = 1 + rule_.slower_by();
        const v1::DeviceStep& d = *devices.at(rank);
        RuleVerdict v;
        v.subject = RankSubject(rank);
        v.holds = shared >= rule_.min_kernels() && slowdown >= threshold;
        v.present = shared >= rule_.min_kernels() && slowdown >= 1 + rule_.slower_by() / 2;
        v.alert = BaseAlert(kRuleSlowKernels);
        v.alert.add_ranks(rank);
        v.alert.set_cause_rank(static_cast<int32_t>(rank));
        v.alert.set_stage(static_cast<int32_t>(stage));
        v.alert.set_metric("kernel_time_ratio");
        v.alert.set_observed(slowdown);
        v.alert.set_baseline(1.0);
        v.alert.set_threshold(threshold);
        v.what = absl::StrFormat("rank %u's kernels run slower than its peers'", rank);
        v.values = absl::StrFormat(
            "median %.2fx its peers' time for the same kernels over %zu kernel names (GPU busy %s)",
            slowdown, shared, FormatNs(static_cast<double>(d.gpu_busy_ns())));
        out.push_back(std::move(v));
      }
    }
    return out;
  }

 private:
  const v1::SlowKernelsRule rule_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeSlowKernelsRule(const v1::RulesConfig& rules) {
  if (!rules.slow_kernels().enabled()) return nullptr;
  return std::make_unique<SlowKernelsRule>(rules.slow_kernels());
}

}  // namespace trainscope::collector
