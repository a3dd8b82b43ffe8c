// The test shared by the rules that flag a GPU device when one part of its
// step (copies with no kernel beside them, idle time while the host runs
// operators, ...) takes a large share of the step: the part holds when it is
// at least max(min_ns, fraction × step time), and is still present (for
// clearing) at half that. Each such rule names its part, its metric and its
// words; the threshold, the subjects and the alert's fields are decided here
// once.
//
// Usage (in a rule's Evaluate):
//   return StepShareVerdicts(step, {.rule = kRuleCopyStall,
//                                   .metric = "copy_stall_ns",
//                                   .min_ns = rule_.min_copy_ns(),
//                                   .fraction = rule_.copy_fraction(),
//                                   .part_ns = [](const v1::DeviceStep& d) {
//                                     return d.copy_stall_ns();
//                                   },
//                                   .describe = &DescribeCopyStall});
//
// Threading: a pure function; safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_SHARE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_SHARE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/alert_rule.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

struct StepShare {
  absl::string_view rule;    // Alert.rule
  absl::string_view metric;  // Alert.metric: the DeviceStep field judged
  int64_t min_ns = 0;        // the part never holds below this ...
  double fraction = 0;       // ... nor below this share of the step
  // The part of a device's step the rule judges.
  int64_t (*part_ns)(const v1::DeviceStep& device) = nullptr;
  // Fills the verdict's `what` and `values` (the part and the step in ns).
  void (*describe)(const v1::DeviceStep& device, double part_ns, double step_ns,
                   RuleVerdict* verdict) = nullptr;
};

// One verdict per complete device with GPU work and a positive step time,
// subject "rank N": observed = the part, baseline = the step time,
// threshold = max(min_ns, fraction × step time).
std::vector<RuleVerdict> StepShareVerdicts(const v1::StepReport& step, const StepShare& share);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_SHARE_H_
