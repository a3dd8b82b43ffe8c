// difficult_item: a training item in the loss-contribution top-N of
// consecutive_epochs epochs running (LossTracker's closed epochs) is a
// candidate mislabeled or ambiguous item. The epochs are the persistence
// test: the rule raises at once and clears once the item stayed out of the
// top-N as many epochs running (no churn at its edge). The rule turns each
// closed epoch into findings; the AlertEngine counts them (hysteresis()).
//
// Usage:
//   DifficultItemRule rule(WithDefaults(rules).difficult_item());
//   for (const ExternalFinding& f : rule.Findings(epoch, step, is_open, tracked))
//     engine-side Judge(f, rule.hysteresis());
//
// Threading: immutable after construction; Findings is const.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_DIFFICULT_ITEM_RULE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_DIFFICULT_ITEM_RULE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/collector/analysis/external_finding.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

class DifficultItemRule {
 public:
  // `rule` with defaults filled.
  explicit DifficultItemRule(const v1::DifficultItemRule& rule);

  bool enabled() const { return rule_.enabled(); }
  // Per epoch: raise after 1, clear after consecutive_epochs.
  const v1::Hysteresis& hysteresis() const { return per_epoch_; }

  // The findings of one closed epoch (`step` is the job's latest): a
  // holding one for each item in it for consecutive_epochs epochs running
  // or whose alert `is_open`, in the epoch's order, then a not-holding one
  // for each of the rule's `tracked` subjects ("item N") not in it.
  std::vector<ExternalFinding> Findings(const LossTracker::ClosedEpoch& epoch, uint64_t step,
                                        const std::function<bool(const std::string&)>& is_open,
                                        const std::vector<std::string>& tracked) const;

 private:
  const v1::DifficultItemRule rule_;
  v1::Hysteresis per_epoch_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DIFFICULT_ITEM_RULE_H_
