#include "trainscope/collector/analysis/rules_config.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "trainscope/collector/analysis/late_arrival_detector.h"

namespace trainscope::collector {
namespace {

// Collects the parser's errors; protobuf reports 0-based positions, people
// count from 1.
class RulesErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrFormat("%d:%d: %s", line + 1, column + 1, message));
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

// Appends an error when `value` lies outside the range; `expected` reads as
// the range for people ("in (0, 1]").
void CheckDouble(bool has, double value, absl::string_view field, bool ok,
                 absl::string_view expected, std::vector<std::string>* errors) {
  if (!has) return;
  if (!std::isfinite(value) || !ok) {
    errors->push_back(absl::StrFormat("%s: expected %s, got %g", field, expected, value));
  }
}

void CheckUnsigned(bool has, uint64_t value, uint64_t min, absl::string_view field,
                   std::vector<std::string>* errors) {
  if (has && value < min) {
    errors->push_back(absl::StrFormat("%s: expected >= %d, got %d", field, min, value));
  }
}

void CheckSigned(bool has, int64_t value, int64_t min, absl::string_view field,
                 std::vector<std::string>* errors) {
  if (has && value < min) {
    errors->push_back(absl::StrFormat("%s: expected >= %d, got %d", field, min, value));
  }
}

void CheckHysteresis(const v1::Hysteresis& h, absl::string_view prefix,
                     std::vector<std::string>* errors) {
  CheckUnsigned(h.has_raise_after_steps(), h.raise_after_steps(), 1,
                absl::StrCat(prefix, "hysteresis.raise_after_steps"), errors);
  CheckUnsigned(h.has_clear_after_steps(), h.clear_after_steps(), 1,
                absl::StrCat(prefix, "hysteresis.clear_after_steps"), errors);
}

// A fraction of something that stays positive (a share of a step, a drop
// below a mean): (0, 1]. Drops of 100 % are allowed only where they mean
// "zero", so below-fractions use (0, 1).
bool InUnitInterval(double v) { return v > 0 && v <= 1; }
bool InOpenUnitInterval(double v) { return v > 0 && v < 1; }

std::vector<std::string> Validate(const v1::RulesConfig& c) {
  std::vector<std::string> e;
  CheckHysteresis(c.hysteresis(), "", &e);
  CheckUnsigned(c.has_window_steps(), c.window_steps(), 1, "window_steps", &e);
  {
    const auto& r = c.low_flops();
    CheckDouble(r.has_below_mean(), r.below_mean(), "low_flops.below_mean",
                InOpenUnitInterval(r.below_mean()), "a fraction in (0, 1)", &e);
    CheckUnsigned(r.has_window_steps(), r.window_steps(), 1, "low_flops.window_steps", &e);
    CheckHysteresis(r.hysteresis(), "low_flops.", &e);
  }
  {
    const auto& r = c.stage_flops_imbalance();
    CheckDouble(r.has_above_mean(), r.above_mean(), "stage_flops_imbalance.above_mean",
                r.above_mean() > 0, "a fraction > 0", &e);
    CheckHysteresis(r.hysteresis(), "stage_flops_imbalance.", &e);
  }
  {
    const auto& r = c.straggler();
    CheckDouble(r.has_z_threshold(), r.z_threshold(), "straggler.z_threshold", r.z_threshold() > 0,
                "a z-score > 0", &e);
    CheckUnsigned(r.has_window_steps(), r.window_steps(), 2, "straggler.window_steps", &e);
    CheckDouble(r.has_min_excess(), r.min_excess(), "straggler.min_excess", r.min_excess() >= 0,
                "a fraction >= 0", &e);
    CheckDouble(r.has_streak_excess(), r.streak_excess(), "straggler.streak_excess",
                r.streak_excess() >= 0, "a fraction >= 0", &e);
    CheckDouble(r.has_streak_wait_fraction(), r.streak_wait_fraction(),
                "straggler.streak_wait_fraction", InUnitInterval(r.streak_wait_fraction()),
                "a fraction in (0, 1]", &e);
    CheckHysteresis(r.hysteresis(), "straggler.", &e);
  }
  {
    const auto& r = c.collective_wait();
    CheckDouble(r.has_min_wait_fraction(), r.min_wait_fraction(),
                "collective_wait.min_wait_fraction", InUnitInterval(r.min_wait_fraction()),
                "a fraction in (0, 1]", &e);
    CheckUnsigned(r.has_streak_steps(), r.streak_steps(), 1, "collective_wait.streak_steps", &e);
    CheckDouble(r.has_sustained_wait_fraction(), r.sustained_wait_fraction(),
                "collective_wait.sustained_wait_fraction",
                InUnitInterval(r.sustained_wait_fraction()), "a fraction in (0, 1]", &e);
    CheckUnsigned(r.has_sustained_steps(), r.sustained_steps(), 1,
                  "collective_wait.sustained_steps", &e);
    CheckDouble(r.has_late_arrival_reference(), r.late_arrival_reference(),
                "collective_wait.late_arrival_reference", r.late_arrival_reference() >= 0,
                "a fraction >= 0", &e);
    CheckDouble(r.has_late_arrival_threshold(), r.late_arrival_threshold(),
                "collective_wait.late_arrival_threshold", r.late_arrival_threshold() > 0,
                "a number > 0", &e);
    CheckDouble(r.has_late_arrival_cap(), r.late_arrival_cap(), "collective_wait.late_arrival_cap",
                InUnitInterval(r.late_arrival_cap()), "a fraction in (0, 1]", &e);
    CheckUnsigned(r.has_late_arrival_clear_steps(), r.late_arrival_clear_steps(), 1,
                  "collective_wait.late_arrival_clear_steps", &e);
    CheckDouble(r.has_late_arrival_frequency_ratio(), r.late_arrival_frequency_ratio(),
                "collective_wait.late_arrival_frequency_ratio",
                r.late_arrival_frequency_ratio() > 1, "a ratio > 1", &e);
    CheckDouble(r.has_late_arrival_frequency_threshold(), r.late_arrival_frequency_threshold(),
                "collective_wait.late_arrival_frequency_threshold",
                r.late_arrival_frequency_threshold() > 0, "a number > 0", &e);
    CheckDouble(r.has_late_arrival_min_margin(), r.late_arrival_min_margin(),
                "collective_wait.late_arrival_min_margin",
                r.late_arrival_min_margin() >= 0 && r.late_arrival_min_margin() < 1,
                "a fraction in [0, 1)", &e);
    CheckHysteresis(r.hysteresis(), "collective_wait.", &e);
  }
  {
    const auto& r = c.slow_link();
    CheckDouble(r.has_below_median(), r.below_median(), "slow_link.below_median",
                InOpenUnitInterval(r.below_median()), "a fraction in (0, 1)", &e);
    CheckDouble(r.has_p2p_below_median(), r.p2p_below_median(), "slow_link.p2p_below_median",
                InOpenUnitInterval(r.p2p_below_median()), "a fraction in (0, 1)", &e);
    CheckDouble(r.has_p2p_min_step_fraction(), r.p2p_min_step_fraction(),
                "slow_link.p2p_min_step_fraction", InOpenUnitInterval(r.p2p_min_step_fraction()),
                "a fraction in (0, 1)", &e);
    CheckHysteresis(r.hysteresis(), "slow_link.", &e);
  }
  {
    const auto& r = c.pipeline_bubble();
    CheckDouble(r.has_bubble_fraction(), r.bubble_fraction(), "pipeline_bubble.bubble_fraction",
                InUnitInterval(r.bubble_fraction()), "a fraction in (0, 1]", &e);
    CheckDouble(r.has_compute_above_mean(), r.compute_above_mean(),
                "pipeline_bubble.compute_above_mean", r.compute_above_mean() > 0, "a fraction > 0",
                &e);
    CheckDouble(r.has_bubble_above_mean(), r.bubble_above_mean(),
                "pipeline_bubble.bubble_above_mean", r.bubble_above_mean() > 0, "a fraction > 0",
                &e);
    CheckHysteresis(r.hysteresis(), "pipeline_bubble.", &e);
  }
  {
    const auto& r = c.loader_stall();
    CheckDouble(r.has_wait_fraction(), r.wait_fraction(), "loader_stall.wait_fraction",
                InUnitInterval(r.wait_fraction()), "a fraction in (0, 1]", &e);
    CheckSigned(r.has_min_wait_ns(), r.min_wait_ns(), 0, "loader_stall.min_wait_ns", &e);
    CheckHysteresis(r.hysteresis(), "loader_stall.", &e);
  }
  {
    const auto& r = c.step_time_regression();
    CheckDouble(r.has_rise(), r.rise(), "step_time_regression.rise", r.rise() > 0, "a fraction > 0",
                &e);
    CheckDouble(r.has_sustained_rise(), r.sustained_rise(), "step_time_regression.sustained_rise",
                r.sustained_rise() > 0, "a fraction > 0", &e);
    CheckUnsigned(r.has_sustained_steps(), r.sustained_steps(), 1,
                  "step_time_regression.sustained_steps", &e);
    CheckUnsigned(r.has_baseline_steps(), r.baseline_steps(), 1,
                  "step_time_regression.baseline_steps", &e);
    CheckHysteresis(r.hysteresis(), "step_time_regression.", &e);
  }
  {
    const auto& r = c.launch_bound();
    CheckDouble(r.has_idle_fraction(), r.idle_fraction(), "launch_bound.idle_fraction",
                InUnitInterval(r.idle_fraction()), "a fraction in (0, 1]", &e);
    CheckSigned(r.has_min_idle_ns(), r.min_idle_ns(), 0, "launch_bound.min_idle_ns", &e);
    CheckHysteresis(r.hysteresis(), "launch_bound.", &e);
  }
  {
    const auto& r = c.copy_stall();
    CheckDouble(r.has_copy_fraction(), r.copy_fraction(), "copy_stall.copy_fraction",
                InUnitInterval(r.copy_fraction()), "a fraction in (0, 1]", &e);
    CheckSigned(r.has_min_copy_ns(), r.min_copy_ns(), 0, "copy_stall.min_copy_ns", &e);
    CheckHysteresis(r.hysteresis(), "copy_stall.", &e);
  }
  {
    const auto& r = c.slow_kernels();
    CheckDouble(r.has_slower_by(), r.slower_by(), "slow_kernels.slower_by", r.slower_by() > 0,
                "a fraction > 0", &e);
    CheckUnsigned(r.has_min_kernels(), r.min_kernels(), 1, "slow_kernels.min_kernels", &e);
    CheckHysteresis(r.hysteresis(), "slow_kernels.", &e);
  }
  {
    const auto& r = c.lost_device();
    CheckUnsigned(r.has_missing_steps(), r.missing_steps(), 1, "lost_device.missing_steps", &e);
  }
  {
    const auto& r = c.difficult_item();
    CheckUnsigned(r.has_consecutive_epochs(), r.consecutive_epochs(), 1,
                  "difficult_item.consecutive_epochs", &e);
  }
  return e;
}

// Rule hysteresis: own field, else the top-level one (already defaulted).
void FillHysteresis(const v1::Hysteresis& top, v1::Hysteresis* h) {
  if (!h->has_raise_after_steps()) h->set_raise_after_steps(top.raise_after_steps());
  if (!h->has_clear_after_steps()) h->set_clear_after_steps(top.clear_after_steps());
}

}  // namespace

absl::StatusOr<v1::RulesConfig> ParseRulesConfig(absl::string_view text) {
  v1::RulesConfig config;
  RulesErrorCollector collector;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  if (!parser.ParseFromString(std::string(text), &config)) {
    if (collector.errors().empty()) return absl::InvalidArgumentError("rules: does not parse");
    return absl::InvalidArgumentError(absl::StrJoin(collector.errors(), "; "));
  }
  std::vector<std::string> errors = Validate(config);
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  return config;
}

absl::StatusOr<v1::RulesConfig> LoadRulesFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat("rules file ", path.string(), ": not found"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("rules file ", path.string(), ": cannot be opened"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<v1::RulesConfig> config = ParseRulesConfig(buffer.str());
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ":", config.status().message()));
  }
  return config;
}

v1::RulesConfig WithDefaults(v1::RulesConfig c) {
  // The hold-up rules (straggler, collective_wait) already demand a streak or
  // a long window, so they raise at once unless the file says otherwise.
  const bool raise_after_given = c.hysteresis().has_raise_after_steps();
  auto raise_at_once = [&](v1::Hysteresis* h) {
    if (!raise_after_given && !h->has_raise_after_steps()) h->set_raise_after_steps(1);
  };
  v1::Hysteresis* top = c.mutable_hysteresis();
  if (!top->has_raise_after_steps()) top->set_raise_after_steps(2);
  if (!top->has_clear_after_steps()) top->set_clear_after_steps(3);
  if (!c.has_warmup_steps()) c.set_warmup_steps(5);
  if (!c.has_window_steps()) c.set_window_steps(5);

  auto* low = c.mutable_low_flops();
  if (!low->has_enabled()) low->set_enabled(true);
  if (!low->has_below_mean()) low->set_below_mean(0.4);
  if (!low->has_window_steps()) low->set_window_steps(20);
  FillHysteresis(*top, low->mutable_hysteresis());

  auto* stage = c.mutable_stage_flops_imbalance();
  if (!stage->has_enabled()) stage->set_enabled(true);
  if (!stage->has_above_mean()) stage->set_above_mean(0.2);
  FillHysteresis(*top, stage->mutable_hysteresis());

  auto* straggler = c.mutable_straggler();
  if (!straggler->has_enabled()) straggler->set_enabled(true);
  if (!straggler->has_z_threshold()) straggler->set_z_threshold(2.5);
  if (!straggler->has_window_steps()) straggler->set_window_steps(c.window_steps());
  if (!straggler->has_min_excess()) straggler->set_min_excess(0.3);
  if (!straggler->has_warmup_steps()) straggler->set_warmup_steps(3);
  if (!straggler->has_streak_excess()) straggler->set_streak_excess(0.6);
  if (!straggler->has_streak_wait_fraction()) straggler->set_streak_wait_fraction(0.25);
  raise_at_once(straggler->mutable_hysteresis());
  FillHysteresis(*top, straggler->mutable_hysteresis());

  auto* wait = c.mutable_collective_wait();
  if (!wait->has_enabled()) wait->set_enabled(true);
  if (!wait->has_min_wait_fraction()) wait->set_min_wait_fraction(0.35);
  if (!wait->has_streak_steps()) wait->set_streak_steps(3);
  if (!wait->has_sustained_wait_fraction()) wait->set_sustained_wait_fraction(0.12);
  if (!wait->has_sustained_steps()) wait->set_sustained_steps(20);
  // The detector's own defaults: one copy of each number.
  const LateArrivalDetector::Options late;
  if (!wait->has_late_arrival_reference()) wait->set_late_arrival_reference(late.reference);
  if (!wait->has_late_arrival_threshold()) wait->set_late_arrival_threshold(late.threshold);
  if (!wait->has_late_arrival_cap()) wait->set_late_arrival_cap(late.cap);
  if (!wait->has_late_arrival_clear_steps()) {
    wait->set_late_arrival_clear_steps(late.clear_steps);
  }
  if (!wait->has_late_arrival_frequency_ratio()) {
    wait->set_late_arrival_frequency_ratio(late.frequency_ratio);
  }
  if (!wait->has_late_arrival_frequency_threshold()) {
    wait->set_late_arrival_frequency_threshold(late.frequency_threshold);
  }
  if (!wait->has_late_arrival_min_margin()) wait->set_late_arrival_min_margin(late.min_margin);
  raise_at_once(wait->mutable_hysteresis());
  FillHysteresis(*top, wait->mutable_hysteresis());

  auto* link = c.mutable_slow_link();
  if (!link->has_enabled()) link->set_enabled(true);
  if (!link->has_below_median()) link->set_below_median(0.5);
  if (!link->has_p2p_below_median()) link->set_p2p_below_median(0.1);
  if (!link->has_p2p_min_step_fraction()) link->set_p2p_min_step_fraction(0.3);
  if (!link->has_min_bytes()) link->set_min_bytes(4096);
  if (!link->has_collective_links()) link->set_collective_links(false);
  FillHysteresis(*top, link->mutable_hysteresis());

  auto* bubble = c.mutable_pipeline_bubble();
  if (!bubble->has_enabled()) bubble->set_enabled(true);
  if (!bubble->has_bubble_fraction()) bubble->set_bubble_fraction(0.3);
  if (!bubble->has_compute_above_mean()) bubble->set_compute_above_mean(0.4);
  if (!bubble->has_bubble_above_mean()) bubble->set_bubble_above_mean(0.5);
  FillHysteresis(*top, bubble->mutable_hysteresis());

  auto* loader = c.mutable_loader_stall();
  if (!loader->has_enabled()) loader->set_enabled(true);
  if (!loader->has_wait_fraction()) loader->set_wait_fraction(0.2);
  if (!loader->has_min_wait_ns()) loader->set_min_wait_ns(5'000'000);
  FillHysteresis(*top, loader->mutable_hysteresis());

  auto* regression = c.mutable_step_time_regression();
  if (!regression->has_enabled()) regression->set_enabled(true);
  if (!regression->has_rise()) regression->set_rise(0.5);
  if (!regression->has_sustained_rise()) regression->set_sustained_rise(0.25);
  if (!regression->has_sustained_steps()) regression->set_sustained_steps(20);
  if (!regression->has_baseline_steps()) regression->set_baseline_steps(20);
  if (!regression->has_warmup_steps()) regression->set_warmup_steps(5);
  FillHysteresis(*top, regression->mutable_hysteresis());

  auto* launch = c.mutable_launch_bound();
  if (!launch->has_enabled()) launch->set_enabled(true);
  if (!launch->has_idle_fraction()) launch->set_idle_fraction(0.3);
  if (!launch->has_min_idle_ns()) launch->set_min_idle_ns(1'000'000);
  FillHysteresis(*top, launch->mutable_hysteresis());

  auto* copy = c.mutable_copy_stall();
  if (!copy->has_enabled()) copy->set_enabled(true);
  if (!copy->has_copy_fraction()) copy->set_copy_fraction(0.2);
  if (!copy->has_min_copy_ns()) copy->set_min_copy_ns(1'000'000);
  FillHysteresis(*top, copy->mutable_hysteresis());

  auto* kernels = c.mutable_slow_kernels();
  if (!kernels->has_enabled()) kernels->set_enabled(true);
  if (!kernels->has_slower_by()) kernels->set_slower_by(0.3);
  if (!kernels->has_min_kernels()) kernels->set_min_kernels(2);
  FillHysteresis(*top, kernels->mutable_hysteresis());

  auto* lost = c.mutable_lost_device();
  if (!lost->has_enabled()) lost->set_enabled(true);
  if (!lost->has_missing_steps()) lost->set_missing_steps(1);

  auto* difficult = c.mutable_difficult_item();
  if (!difficult->has_enabled()) difficult->set_enabled(true);
  if (!difficult->has_consecutive_epochs()) difficult->set_consecutive_epochs(3);
  return c;
}

std::vector<std::string> KnownRuleNames() {
  return {std::string(kRuleLowFlops),    std::string(kRuleStageFlopsImbalance),
          std::string(kRuleStraggler),   std::string(kRuleCollectiveWait),
          std::string(kRuleSlowLink),    std::string(kRulePipelineBubble),
          std::string(kRuleLoaderStall), std::string(kRuleStepTimeRegression),
          std::string(kRuleLostDevice),  std::string(kRuleDifficultItem),
          std::string(kRuleLaunchBound), std::string(kRuleCopyStall),
          std::string(kRuleSlowKernels)};
}

std::string DefaultRulesText() {
  std::string body;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(WithDefaults(v1::RulesConfig()), &body);
  return absl::StrCat(
      "# trainscope-collector rules (protobuf text format, trainscope.v1.RulesConfig).\n"
      "# These are the defaults; a file needs only the fields it changes. Durations\n"
      "# in ns; fractions of 1. Pass with `trainscope-collector --rules FILE`.\n",
      body);
}

}  // namespace trainscope::collector
