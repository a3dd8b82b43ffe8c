// A verdict on one subject from a rule the AlertEngine does not judge on the
// step windows (the loss-contribution rules, difficult_item): it goes
// through the same raise/clear counting as the step rules, one finding per
// evaluation.
//
// Usage:
//   ExternalFinding f;
//   f.rule = "loss_contribution";
//   f.subject = "sample 1234";
//   f.holds = true;
//   engine.OnExternalFinding(f, now_unix_ns);
//
// Threading: plain value type.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_EXTERNAL_FINDING_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_EXTERNAL_FINDING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::collector {

struct ExternalFinding {
  std::string rule;  // e.g. "loss_contribution"
  uint64_t step = 0;
  std::vector<uint32_t> ranks;
  std::string metric;
  double observed = 0;
  double baseline = 0;
  double threshold = 0;
  std::string message;  // used as the raise's message
  bool holds = false;
  std::string subject;           // which cause within the rule, e.g. "sample 1234"
  std::optional<uint64_t> item;  // a training item the finding is about (Alert.item)
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_EXTERNAL_FINDING_H_
