#include "trainscope/collector/analysis/alert_engine.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/alert_rule_registry.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {
namespace {

// Rules whose alerts name a cause that others' alerts can be effects of.
bool NamesACause(const std::string& rule) {
  return rule == kRuleStraggler || rule == kRuleCollectiveWait || rule == kRuleLoaderStall ||
         rule == kRuleSlowLink || rule == kRuleLostDevice;
}

// Whether `effect`, raised while `cause` is open, is filed under it:
//  - an alert about the same device, except that a rule saying WHY the
//    device is late (straggler, loader_stall, ...) is never filed under
//    collective_wait, which only says THAT it is late;
//  - the job's step-time regression (the cause's device or none named);
//  - low FLOPS of another device while a device holds the others up: where
//    devices share CPU cores (the examples, CI) they share the slowdown, and
//    that device's FLOPS are not a cause of their own.
bool IsEffectOf(const v1::Alert& effect, const v1::Alert& cause) {
  const bool same_device = effect.cause_rank() >= 0 && cause.cause_rank() == effect.cause_rank();
  if (effect.rule() == kRuleStepTimeRegression) return effect.cause_rank() < 0 || same_device;
  if (same_device) return cause.rule() != kRuleCollectiveWait || !NamesACause(effect.rule());
  return effect.rule() == kRuleLowFlops &&
         (cause.rule() == kRuleStraggler || cause.rule() == kRuleCollectiveWait ||
          cause.rule() == kRuleLoaderStall);
}

}  // namespace

AlertEngine::AlertEngine(std::string job_id, v1::RulesConfig rules)
    : job_id_(std::move(job_id)),
      rules_(WithDefaults(std::move(rules))),
      history_(rules_),
      step_rules_(MakeStepRules(rules_)),
      lost_devices_(rules_.lost_device()),
      difficult_items_(rules_.difficult_item()) {}

std::vector<v1::Alert> AlertEngine::OnStep(const v1::StepReport& step, int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  holding_rules_.clear();
  history_.OnStep(step);
  if (!history_.in_warmup()) {
    for (const LostDeviceRule::Change& change : lost_devices_.OnStep(step)) {
      File(change, now_unix_ns, &out);
    }
    for (const std::unique_ptr<AlertRule>& rule : step_rules_) {
      Judge(std::string(rule->name()), rule->hysteresis(), rule->Evaluate(step, history_),
            step.step(), now_unix_ns, &out);
    }
    GroupUnderCauses(&out);
  }
  if (lost_devices_.any_lost()) NoteHolding(std::string(kRuleLostDevice));
  for (const TrackKey& key : external_holding_) NoteHolding(key.first);
  return out;
}

void AlertEngine::NoteHolding(const std::string& rule) {
  if (std::find(holding_rules_.begin(), holding_rules_.end(), rule) == holding_rules_.end()) {
    holding_rules_.push_back(rule);
  }
}

void AlertEngine::Judge(const std::string& rule, const v1::Hysteresis& hysteresis,
                        std::vector<RuleVerdict> verdicts, uint64_t step, int64_t now_unix_ns,
                        std::vector<v1::Alert>* out) {
  std::map<std::string, const RuleVerdict*> by_subject;
  for (const RuleVerdict& v : verdicts) {
    by_subject[v.subject] = &v;
    if (v.holds) tracks_.try_emplace(TrackKey(rule, v.subject));
  }
  bool held = false;
  for (auto it = tracks_.lower_bound(TrackKey(rule, ""));
       it != tracks_.end() && it->first.first == rule;) {
    auto found = by_subject.find(it->first.second);
    const RuleVerdict* verdict = found == by_subject.end() ? nullptr : found->second;
    Track& track = it->second;
    held |= Advance(&track, verdict, hysteresis, step, now_unix_ns, out);
    const bool idle = !track.open && track.hold_run == 0;
    it = idle ? tracks_.erase(it) : std::next(it);
  }
  if (held) NoteHolding(rule);
}

bool AlertEngine::Advance(Track* track, const RuleVerdict* verdict,
                          const v1::Hysteresis& hysteresis, uint64_t step, int64_t now_unix_ns,
                          std::vector<v1::Alert>* out) {
  const bool holds = verdict != nullptr && verdict->holds;
  if (holds) {
    track->last_holding = *verdict;
    track->last_hold_step = step;
  }
  track->hold_run = holds ? track->hold_run + 1 : 0;
  const bool raise = track->hold_run >= hysteresis.raise_after_steps();
  const bool present = holds;
  const bool gone = !(verdict != nullptr && verdict->present);
  if (!gone) track->clear_run = 0;
  if (raise && !track->open) {
    // Onset: the rule's own change point, else the first holding step.
    track->onset_step = verdict->onset_step.value_or(step + 1 - track->hold_run);
    const RuleVerdict& details = track->last_holding;
    const std::string message =
        details.values.empty()
            ? details.what
            : absl::StrCat(details.what, ": ", details.values, " since step ", track->onset_step);
    track->raised = Raise(details.alert, step, track->onset_step, now_unix_ns, message);
    track->open = true;
    out->push_back(track->raised);
    return true;
  }
  if (!gone) return present || track->open;
  if (track->open && ++track->clear_run >= hysteresis.clear_after_steps()) {
    std::string message = absl::StrCat("no longer: ", track->last_holding.what);
    if (verdict != nullptr && !verdict->values.empty()) {
      absl::StrAppend(&message, " (now ", verdict->values, ")");
    }
    absl::StrAppend(&message, "; held from step ", track->onset_step, " to ",
                    track->last_hold_step);
    out->push_back(Clear(track->raised, verdict != nullptr ? &verdict->alert : nullptr, step,
                         now_unix_ns, message));
    track->open = false;
    track->clear_run = 0;
  }
  return false;
}

void AlertEngine::File(const LostDeviceRule::Change& change, int64_t now_unix_ns,
                       std::vector<v1::Alert>* out) {
  if (change.lost) {
    v1::Alert raised =
        Raise(change.alert, change.step, change.onset_step, now_unix_ns, change.message);
    lost_alerts_[change.rank] = raised;
    out->push_back(std::move(raised));
    return;
  }
  auto it = lost_alerts_.find(change.rank);
  if (it == lost_alerts_.end()) return;
  out->push_back(Clear(it->second, nullptr, change.step, now_unix_ns, change.message));
  lost_alerts_.erase(it);
}

std::vector<v1::Alert> AlertEngine::OnDeviceLost(uint32_t rank, uint64_t last_step,
                                                 int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  if (std::optional<LostDeviceRule::Change> change = lost_devices_.OnStreamLost(rank, last_step)) {
    File(*change, now_unix_ns, &out);
  }
  return out;
}

std::vector<v1::Alert> AlertEngine::OnDeviceBack(uint32_t rank, uint64_t step,
                                                 int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  if (std::optional<LostDeviceRule::Change> change = lost_devices_.OnDeviceBack(rank, step)) {
    File(*change, now_unix_ns, &out);
  }
  return out;
}

std::vector<v1::Alert> AlertEngine::OnExternalFinding(const ExternalFinding& finding,
                                                      int64_t now_unix_ns) {
  return Judge(finding, rules_.hysteresis(), now_unix_ns);
}

std::vector<v1::Alert> AlertEngine::OnLossEpoch(const LossTracker::ClosedEpoch& epoch,
                                                uint64_t step, int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  if (!difficult_items_.enabled()) return out;
  const std::string name(kRuleDifficultItem);
  auto is_open = [&](const std::string& subject) {
    auto track = tracks_.find(TrackKey(name, subject));
    return track != tracks_.end() && track->second.open;
  };
  std::vector<std::string> tracked;
  for (const auto& [key, track] : tracks_) {
    if (key.first == name) tracked.push_back(key.second);
  }
  for (const ExternalFinding& finding : difficult_items_.Findings(epoch, step, is_open, tracked)) {
    for (v1::Alert& alert : Judge(finding, difficult_items_.hysteresis(), now_unix_ns)) {
      out.push_back(std::move(alert));
    }
  }
  return out;
}

std::vector<v1::Alert> AlertEngine::Judge(const ExternalFinding& finding,
                                          const v1::Hysteresis& hysteresis, int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  const TrackKey key(finding.rule, finding.subject);
  auto it = tracks_.find(key);
  if (it == tracks_.end()) {
    if (!finding.holds) return out;
    it = tracks_.try_emplace(key).first;
  }
  RuleVerdict v;
  v.subject = finding.subject;
  v.holds = finding.holds;
  v.alert = BaseAlert(finding.rule);
  for (uint32_t r : finding.ranks) v.alert.add_ranks(r);
  if (finding.ranks.size() == 1) v.alert.set_cause_rank(static_cast<int32_t>(finding.ranks[0]));
  v.alert.set_metric(finding.metric);
  if (finding.item.has_value()) v.alert.set_item(*finding.item);
  v.alert.set_observed(finding.observed);
  v.alert.set_baseline(finding.baseline);
  v.alert.set_threshold(finding.threshold);
  v.what = finding.message.empty() ? absl::StrCat(finding.rule, " on ", finding.subject)
                                   : finding.message;
  v.present = finding.holds;
  const bool holds = Advance(&it->second, &v, hysteresis, finding.step, now_unix_ns, &out);
  if (holds) {
    external_holding_.insert(key);
  } else {
    external_holding_.erase(key);
    if (!it->second.open && it->second.hold_run == 0) tracks_.erase(it);
  }
  return out;
}

void AlertEngine::GroupUnderCauses(std::vector<v1::Alert>* out) {
  // The open cause alerts, oldest first: the first raised is the cause.
  std::vector<const v1::Alert*> causes;
  for (const auto& [key, track] : tracks_) {
    if (track.open && NamesACause(track.raised.rule()) && track.raised.caused_by_alert_id() == 0) {
      causes.push_back(&track.raised);
    }
  }
  for (const auto& [rank, lost] : lost_alerts_) causes.push_back(&lost);
  std::sort(causes.begin(), causes.end(),
            [](const v1::Alert* a, const v1::Alert* b) { return a->alert_id() < b->alert_id(); });
  for (v1::Alert& alert : *out) {
    if (alert.state() != v1::ALERT_STATE_RAISED || alert.rule() == kRuleLostDevice) continue;
    const v1::Alert* cause = nullptr;
    for (const v1::Alert* c : causes) {
      if (c->alert_id() >= alert.alert_id()) break;
      if (IsEffectOf(alert, *c)) {
        cause = c;
        break;
      }
    }
    if (cause == nullptr) continue;
    // The cause's sentence without its figures: "rank 2 is a straggler".
    const std::string cause_message(absl::string_view(cause->message())
                                        .substr(0, absl::string_view(cause->message()).find(": ")));
    const uint64_t cause_id = cause->alert_id();
    for (auto& [key, track] : tracks_) {
      if (track.open && track.raised.alert_id() == alert.alert_id()) {
        track.raised.set_caused_by_alert_id(cause_id);
        track.raised.set_message(absl::StrCat(track.raised.message(), " (an effect of alert #",
                                              cause_id, ": ", cause_message, ")"));
        alert = track.raised;
      }
    }
  }
}

std::vector<v1::Alert> AlertEngine::OpenAlerts() const {
  std::vector<v1::Alert> open;
  for (const auto& [key, track] : tracks_) {
    if (track.open) open.push_back(track.raised);
  }
  for (const auto& [rank, lost] : lost_alerts_) open.push_back(lost);
  std::sort(open.begin(), open.end(),
            [](const v1::Alert& a, const v1::Alert& b) { return a.alert_id() < b.alert_id(); });
  return open;
}

v1::Alert AlertEngine::Raise(v1::Alert alert, uint64_t step, uint64_t onset_step,
                             int64_t now_unix_ns, const std::string& message) {
  alert.set_job_id(job_id_);
  alert.set_alert_id(next_alert_id_++);
  alert.set_state(v1::ALERT_STATE_RAISED);
  alert.set_step(step);
  alert.set_onset_step(std::min(onset_step, step));
  alert.set_message(message);
  alert.set_step_closed_unix_ns(now_unix_ns);
  alert.set_raised_unix_ns(now_unix_ns);
  return alert;
}

v1::Alert AlertEngine::Clear(const v1::Alert& raised, const v1::Alert* now_values, uint64_t step,
                             int64_t now_unix_ns, const std::string& message) {
  v1::Alert alert = raised;
  alert.set_state(v1::ALERT_STATE_CLEARED);
  alert.set_step(step);
  alert.set_message(message);
  alert.set_step_closed_unix_ns(now_unix_ns);
  alert.set_raised_unix_ns(now_unix_ns);
  if (now_values != nullptr) {
    alert.set_observed(now_values->observed());
    alert.set_baseline(now_values->baseline());
    alert.set_threshold(now_values->threshold());
  }
  return alert;
}

}  // namespace trainscope::collector
