// lost_device: a device that reported none of the last `missing_steps`
// closed steps (StepReport.missing_ranks), or whose stream closed without
// goodbye (the caller judged it lost). Raised at once, without the
// raise/clear counting of the step rules; cleared when the device reports
// steps again or comes back. The rule decides; the AlertEngine files the
// changes as alerts (ids, times, grouping).
//
// Usage:
//   LostDeviceRule lost(WithDefaults(rules).lost_device());
//   for (const LostDeviceRule::Change& c : lost.OnStep(report)) File(c);
//   if (auto c = lost.OnStreamLost(rank, last_step)) File(*c);
//
// Threading: not thread-safe; owned by the AlertEngine's thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_LOST_DEVICE_RULE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_LOST_DEVICE_RULE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class LostDeviceRule {
 public:
  // One rank's lost_device alert raised or cleared.
  struct Change {
    uint32_t rank = 0;
    bool lost = false;  // raised (true) or cleared
    v1::Alert alert;    // when raised: the rule's fields
    uint64_t step = 0;
    uint64_t onset_step = 0;  // when raised
    std::string message;
  };

  // `rule` with defaults filled.
  explicit LostDeviceRule(const v1::LostDeviceRule& rule) : rule_(rule) {}

  // A closed step (past the job's warmup): raises the ranks missing from
  // `missing_steps` steps running, clears those that report again (steps
  // their closed stream had sent before it closed do not count).
  std::vector<Change> OnStep(const v1::StepReport& step);
  // The rank's stream closed without goodbye after `last_step`: raises at
  // once unless already raised.
  std::optional<Change> OnStreamLost(uint32_t rank, uint64_t last_step);
  // The rank has a new stream: clears it.
  std::optional<Change> OnDeviceBack(uint32_t rank, uint64_t step);

  // Whether some rank's alert is raised.
  bool any_lost() const;

 private:
  struct RankState {
    uint32_t missing_run = 0;  // consecutive closed steps without the rank
    bool lost = false;         // raised
    // Raised by OnStreamLost: the last step the stream reported. Steps up to
    // it may still close with the rank complete (the assembler lags the
    // streams); they do not mean the rank reports steps again.
    std::optional<uint64_t> stream_lost_after;
  };

  const v1::LostDeviceRule rule_;
  std::map<uint32_t, RankState> ranks_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_LOST_DEVICE_RULE_H_
