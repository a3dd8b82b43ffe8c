#include "trainscope/collector/analysis/difficult_item_rule.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {

DifficultItemRule::DifficultItemRule(const v1::DifficultItemRule& rule) : rule_(rule) {
  per_epoch_.set_raise_after_steps(1);
  per_epoch_.set_clear_after_steps(rule_.consecutive_epochs());
}

std::vector<ExternalFinding> DifficultItemRule::Findings(
    const LossTracker::ClosedEpoch& epoch, uint64_t step,
    const std::function<bool(const std::string&)>& is_open,
    const std::vector<std::string>& tracked) const {
  std::vector<ExternalFinding> out;
  const std::string name(kRuleDifficultItem);
  std::set<std::string> holding;
  for (const LossTracker::ClosedItem& item : epoch.items) {
    const v1::ItemScore& score = item.score;
    const std::string subject = absl::StrCat("item ", score.item());
    if (item.epochs_in_top < rule_.consecutive_epochs() && !is_open(subject)) continue;
    ExternalFinding finding;
    finding.rule = name;
    finding.subject = subject;
    finding.item = score.item();
    finding.step = step;
    finding.metric = "epochs_in_top";
    finding.observed = item.epochs_in_top;
    finding.threshold = rule_.consecutive_epochs();
    finding.baseline = score.contribution();
    finding.holds = true;
    finding.message = absl::StrCat(
        "item ", score.item(), " (label ", score.label(), ", predicted ", score.prediction(),
        ", rank ", score.rank(), ") has been in the top ", epoch.top_n, " loss contribution for ",
        item.epochs_in_top, " epochs running: a candidate mislabeled or ambiguous item");
    holding.insert(finding.subject);
    out.push_back(std::move(finding));
  }
  for (const std::string& subject : tracked) {
    if (holding.count(subject)) continue;
    ExternalFinding finding;
    finding.rule = name;
    finding.subject = subject;
    finding.step = step;
    finding.message = absl::StrCat(subject, " left the loss-contribution top ", epoch.top_n);
    out.push_back(std::move(finding));
  }
  return out;
}

}  // namespace trainscope::collector
