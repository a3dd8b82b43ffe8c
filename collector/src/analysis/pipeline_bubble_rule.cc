// pipeline_bubble: a pipeline stage that idles in bubbles (its window
// median of idle and wait time above PipelineBubbleRule's bounds), or,
// when a stage is overloaded (compute above the stages' mean by
// compute_above_mean), the overloaded stage that makes the others idle:
// the rule names the cause, not its victims' bubbles.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "trainscope/collector/analysis/alert_format.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/analysis/statistics.h"

namespace trainscope::collector {
namespace {

class PipelineBubbleRule : public AlertRule {
 public:
  PipelineBubbleRule(const v1::PipelineBubbleRule& rule, size_t window_steps)
      : rule_(rule), window_steps_(window_steps) {}

  absl::string_view name() const override { return kRulePipelineBubble; }
  const v1::Hysteresis& hysteresis() const override { return rule_.hysteresis(); }

  std::vector<RuleVerdict> Evaluate(const v1::StepReport& step,
                                    const RuleHistory& history) override {
    const size_t window = window_steps_;
    std::vector<Stage> stages;
    std::vector<double> computes;
    std::vector<double> bubbles;
    for (const auto& [stage, samples] : history.stage_windows()) {
      if (samples.size() < window) continue;
      const double compute =
          Median(Last(samples, window, [](const StageSample& s) { return s.compute; }));
      const double bubble =
          Median(Last(samples, window, [](const StageSample& s) { return s.bubble; }));
      stages.push_back({stage, &samples, compute, bubble});
      computes.push_back(compute);
      bubbles.push_back(bubble);
    }
    std::vector<RuleVerdict> out;
    if (stages.size() < 2) return out;
    Bounds b;
    b.mean_compute = Mean(computes);
    b.mean_bubble = Mean(bubbles);
    std::vector<double> step_times;
    for (const auto& [rank, samples] : history.device_windows()) {
      for (double t : Last(samples, window, [](const DeviceSample& s) { return s.step_time; })) {
        step_times.push_back(t);
      }
    }
    b.step_time = Median(std::move(step_times));
    b.compute_threshold = (1 + rule_.compute_above_mean()) * b.mean_compute;
    b.bubble_threshold = std::max(rule_.bubble_fraction() * b.step_time,
                                  (1 + rule_.bubble_above_mean()) * b.mean_bubble);
    // Hysteresis bands: an open alert stays while half the margin remains.
    b.compute_band = (1 + rule_.compute_above_mean() / 2) * b.mean_compute;
    b.bubble_band = std::max(rule_.bubble_fraction() / 2 * b.step_time,
                             (1 + rule_.bubble_above_mean() / 2) * b.mean_bubble);
    // An overloaded stage makes the others idle: name the overloaded one, not
    // its victims' bubbles (judged with the band, so that a stage near the
    // threshold does not flip the rule between its two readings).
    bool any_imbalanced = false;
    for (const Stage& s : stages) {
      if (b.mean_compute > 0 && s.compute >= b.compute_band) any_imbalanced = true;
    }
    for (const Stage& s : stages) {
      out.push_back(any_imbalanced ? Overloaded(s, stages, b) : Bubble(s, b));
    }
    return out;
  }

 private:
  struct Stage {
    uint32_t stage;
    const std::deque<StageSample>* samples;
    double compute;  // window medians
    double bubble;
  };
  // The thresholds of one step, over every stage.
  struct Bounds {
    double mean_compute = 0;
    double mean_bubble = 0;
    double step_time = 0;  // median of the devices' over the window
    double compute_threshold = 0;
    double bubble_threshold = 0;
    double compute_band = 0;
    double bubble_band = 0;
  };

  RuleVerdict StageVerdict(const Stage& s) const {
    const std::vector<uint32_t>& ranks = s.samples->back().ranks;
    RuleVerdict v;
    v.subject = StageSubject(s.stage);
    v.alert = BaseAlert(kRulePipelineBubble);
    for (uint32_t r : ranks) v.alert.add_ranks(r);
    if (ranks.size() == 1) v.alert.set_cause_rank(static_cast<int32_t>(ranks[0]));
    v.alert.set_stage(static_cast<int32_t>(s.stage));
    return v;
  }

  RuleVerdict Overloaded(const Stage& s, const std::vector<Stage>& stages, const Bounds& b) const {
    RuleVerdict v = StageVerdict(s);
    v.holds = s.compute >= b.compute_threshold;
    v.present = s.compute >= b.compute_band;
    v.onset_step = TrailingOnset(*s.samples, window_steps_, [&](const StageSample& x) {
      return x.compute >= b.compute_threshold;
    });
    for (const Stage& other : stages) {
      if (&other == &s) continue;
      for (uint32_t r : other.samples->back().ranks) v.alert.add_victim_ranks(r);
    }
    v.alert.set_metric("compute_ns");
    v.alert.set_observed(s.compute);
    v.alert.set_baseline(b.mean_compute);
    v.alert.set_threshold(b.compute_threshold);
    v.what = absl::StrFormat("stage %u (ranks %s) is overloaded and stalls the pipeline", s.stage,
                             RankList(s.samples->back().ranks));
    v.values = absl::StrFormat("compute median %s vs stage mean %s", FormatNs(s.compute),
                               FormatNs(b.mean_compute));
    return v;
  }

  RuleVerdict Bubble(const Stage& s, const Bounds& b) const {
    RuleVerdict v = StageVerdict(s);
    v.holds = b.step_time > 0 && s.bubble >= b.bubble_threshold;
    v.present = b.step_time > 0 && s.bubble >= b.bubble_band;
    v.onset_step = TrailingOnset(*s.samples, window_steps_, [&](const StageSample& x) {
      return x.bubble >= b.bubble_threshold;
    });
    v.alert.set_metric("bubble_ns");
    v.alert.set_observed(s.bubble);
    v.alert.set_baseline(b.mean_bubble);
    v.alert.set_threshold(b.bubble_threshold);
    v.what = absl::StrFormat("stage %u (ranks %s) idles in pipeline bubbles", s.stage,
                             RankList(s.samples->back().ranks));
    v.values = absl::StrFormat("bubble median %s of a %s step vs stage mean %s", FormatNs(s.bubble),
                               FormatNs(b.step_time), FormatNs(b.mean_bubble));
    return v;
  }

  const v1::PipelineBubbleRule rule_;
  const size_t window_steps_;
};

}  // namespace

std::unique_ptr<AlertRule> MakePipelineBubbleRule(const v1::RulesConfig& rules) {
  if (!rules.pipeline_bubble().enabled()) return nullptr;
  return std::make_unique<PipelineBubbleRule>(rules.pipeline_bubble(), rules.window_steps());
}

}  // namespace trainscope::collector
