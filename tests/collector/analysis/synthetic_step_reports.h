// A noisy synthetic job's closed StepReports with injectable faults, for the
// tests of the alert rules and the AlertEngine, and a driver that runs one
// rule over them as the engine does.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_STEP_REPORTS_H_
#define TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_STEP_REPORTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "trainscope/collector/analysis/alert_rule.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector::testing {

constexpr int64_t kMs = 1'000'000;

// A fault active on steps [from, to).
struct Window {
  uint64_t from = 0;
  uint64_t to = 0;
  bool Active(uint64_t step) const { return step >= from && step < to; }
};

// A noisy synchronous job: per step every rank waits for data, computes and
// joins a gradient all-reduce, which waits for the last arriver; stages (if
// more than one) take turns as in a pipeline. Noise: 3 % Gaussian on every
// duration plus, now and then, a single step up to 1.6x slower on one rank.
class SyntheticJob {
 public:
  SyntheticJob(uint32_t ranks, uint32_t stages, uint64_t seed)
      : ranks_(ranks), stages_(stages), rng_(seed) {}

  int slow_rank = -1;
  double slow_factor = 1;
  Window slow;
  uint32_t link_src = 0, link_dst = 0;
  int64_t link_extra_ns = 0;
  Window slow_link;
  int stall_rank = -1;  // -2: every rank
  int64_t stall_ns = 0;
  Window stall;
  uint32_t heavy_stage = 0;
  double heavy_factor = 1;
  Window imbalance;
  int killed_rank = -1;
  uint64_t killed_from = 0;

  uint32_t StageOf(uint32_t rank) const { return rank * stages_ / ranks_; }

  // One closed step's report: every present rank complete.
  v1::StepReport Step(uint64_t step);

 private:
  double Noise();

  uint32_t ranks_;
  uint32_t stages_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> noise_{1.0, 0.03};
  std::uniform_real_distribution<double> spike_{0.0, 1.0};
};

// Feeds steps 1..`steps` of `job` to a RuleHistory and to the rule `make`
// builds from `rules` (defaults filled here), in the engine's order; returns
// each step's verdicts. `edit`, when set, changes each report first.
std::map<uint64_t, std::vector<RuleVerdict>> RunRule(
    SyntheticJob& job, AlertRuleFactory make, const v1::RulesConfig& rules, uint64_t steps,
    const std::function<void(v1::StepReport*)>& edit = nullptr);

// The subjects whose verdict holds.
std::set<std::string> Holding(const std::vector<RuleVerdict>& verdicts);

}  // namespace trainscope::collector::testing

#endif  // TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_STEP_REPORTS_H_
