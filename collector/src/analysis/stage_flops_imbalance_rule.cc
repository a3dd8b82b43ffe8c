// stage_flops_imbalance: a pipeline stage whose window median of FLOPs per
// step is above the stages' mean by StageFlopsImbalanceRule.above_mean.
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

class StageFlopsImbalanceRule : public AlertRule {
 public:
  StageFlopsImbalanceRule(const v1::StageFlopsRule& rule, size_t window_steps)
      : rule_(rule), window_steps_(window_steps) {}

  absl::string_view name() const override { return kRuleStageFlopsImbalance; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    const size_t window = window_steps_;
    std::vector<std::pair<uint32_t, double>> stages;  // (stage, window median FLOPs)
    std::vector<double> medians;
    for (const auto& [stage, samples] : history.stage_windows()) {
      if (samples.size() < window) continue;
      const double flops =
          Median(Last(samples, window, [](const StageSample& s) { return s.flops; }));
      if (flops <= 0) continue;
      stages.emplace_back(stage, flops);
      medians.push_back(flops);
    }
    std::vector<RuleVerdict> out;
    if (stages.size() < 2) return out;
    const double mean = Mean(medians);
    const double threshold = (1 + rule_.above_mean()) * mean;
    for (const auto& [stage, flops] : stages) {
      const std::deque<StageSample>& samples = history.stage_windows().at(stage);
      const std::vector<uint32_t>& ranks = samples.back().ranks;
      RuleVerdict v;
      v.subject = StageSubject(stage);
      v.holds = flops >= threshold;
      v.present = v.holds;
      v.onset_step = TrailingOnset(samples, window,
                                   [&](const StageSample& s) { return s.flops >= threshold; });
      v.alert = BaseAlert(kRuleStageFlopsImbalance);
      for (uint32_t r : ranks) v.alert.add_ranks(r);
      if (ranks.size() == 1) v.alert.set_cause_rank(static_cast<int32_t>(ranks[0]));
      v.alert.set_stage(static_cast<int32_t>(stage));
      v.alert.set_metric("flops");
      v.alert.set_observed(flops);
      v.alert.set_baseline(mean);
      v.alert.set_threshold(threshold);
      v.what =
          absl::StrFormat("stage %u (ranks %s) carries too many FLOPs", stage, RankList(ranks));
      v.values = absl::StrFormat("%s FLOPs vs stage mean %s (%.0f%% above)", FormatCount(flops),
                                 FormatCount(mean), 100.0 * (flops / mean - 1));
      out.push_back(std::move(v));
    }
    return out;
  }

 private:
  const v1::StageFlopsRule rule_;
  const size_t window_steps_;
};

}  // namespace

std::unique_ptr<AlertRule> MakeStageFlopsImbalanceRule(const v1::RulesConfig& rules) {
  if (!rules.stage_flops_imbalance().enabled()) return nullptr;
  return std::make_unique<StageFlopsImbalanceRule>(rules.stage_flops_imbalance(),
                                                   rules.window_steps());
}

}  // namespace trainscope::collector
