#include "trainscope/collector/analysis/alert_engine.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "alert_engine_internal.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {

using alert_internal::BaseAlert;
using alert_internal::CompleteDevices;
using alert_internal::Last;
using alert_internal::Median;
using alert_internal::TrailingOnset;

namespace {

LateArrivalDetector::Options LateArrivalOptions(const v1::CollectiveWaitRule& rule) {
  LateArrivalDetector::Options o;
  o.reference = rule.late_arrival_reference();
  o.threshold = rule.late_arrival_threshold();
  o.cap = rule.late_arrival_cap();
  o.clear_steps = rule.late_arrival_clear_steps();
  o.frequency_ratio = rule.late_arrival_frequency_ratio();
  o.frequency_threshold = rule.late_arrival_frequency_threshold();
  o.min_margin = rule.late_arrival_min_margin();
  return o;
}

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
      late_arrivals_(LateArrivalOptions(rules_.collective_wait())) {
  history_size_ = std::max<size_t>(
      {rules_.window_steps(), rules_.straggler().window_steps(), rules_.low_flops().window_steps(),
       rules_.collective_wait().streak_steps(), rules_.collective_wait().sustained_steps()});
}

std::vector<v1::Alert> AlertEngine::OnStep(const v1::StepReport& step, int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  holding_rules_.clear();
  ++steps_seen_;
  if (steps_seen_ > rules_.warmup_steps()) {
    const uint64_t s = step.step();
    UpdateLostDevices(step, now_unix_ns, &out);
    UpdateHistory(step);
    late_arrivals_.OnStep(step);
    const v1::RulesConfig& r = rules_;
    if (r.low_flops().enabled()) {
      Judge(std::string(kRuleLowFlops), r.low_flops().hysteresis(), LowFlops(step), s, now_unix_ns,
            &out);
    }
    if (r.stage_flops_imbalance().enabled()) {
      Judge(std::string(kRuleStageFlopsImbalance), r.stage_flops_imbalance().hysteresis(),
            StageFlops(step), s, now_unix_ns, &out);
    }
    if (r.straggler().enabled() && steps_seen_ > r.straggler().warmup_steps()) {
      Judge(std::string(kRuleStraggler), r.straggler().hysteresis(), Straggler(step), s,
            now_unix_ns, &out);
    }
    if (r.collective_wait().enabled()) {
      Judge(std::string(kRuleCollectiveWait), r.collective_wait().hysteresis(),
            CollectiveWait(step), s, now_unix_ns, &out);
    }
    if (r.slow_link().enabled()) {
      Judge(std::string(kRuleSlowLink), r.slow_link().hysteresis(), SlowLink(step), s, now_unix_ns,
            &out);
    }
    if (r.pipeline_bubble().enabled()) {
      Judge(std::string(kRulePipelineBubble), r.pipeline_bubble().hysteresis(),
            PipelineBubble(step), s, now_unix_ns, &out);
    }
    if (r.loader_stall().enabled()) {
      Judge(std::string(kRuleLoaderStall), r.loader_stall().hysteresis(), LoaderStall(step), s,
            now_unix_ns, &out);
    }
    if (r.step_time_regression().enabled()) {
      Judge(std::string(kRuleStepTimeRegression), r.step_time_regression().hysteresis(),
            StepTimeRegression(step), s, now_unix_ns, &out);
    }
    GroupUnderCauses(&out);
  }
  for (const auto& [rank, lost] : lost_) {
    if (lost.open) NoteHolding(std::string(kRuleLostDevice));
  }
  for (const TrackKey& key : external_holding_) NoteHolding(key.first);
  return out;
}

void AlertEngine::NoteHolding(const std::string& rule) {
  if (std::find(holding_rules_.begin(), holding_rules_.end(), rule) == holding_rules_.end()) {
    holding_rules_.push_back(rule);
  }
}

void AlertEngine::UpdateHistory(const v1::StepReport& step) {
  const std::vector<const v1::DeviceStep*> devices = CompleteDevices(step);
  std::map<uint32_t, const v1::DeviceStep*> by_rank;
  for (const v1::DeviceStep* d : devices) {
    by_rank[d->rank()] = d;
    if (d->step_time_ns() <= 0) continue;
    DeviceSample sample;
    sample.step = step.step();
    sample.stage = d->stage();
    sample.step_time = static_cast<double>(d->step_time_ns());
    sample.wait = static_cast<double>(d->wait_ns());
    sample.data_wait = static_cast<double>(d->data_wait_ns());
    sample.own = std::max(0.0, sample.step_time - sample.wait - sample.data_wait);
    sample.flops_per_second = d->flops() > 0 ? d->flops_per_second() : 0;
    sample.waited_for = d->waited_for_rank();
    std::vector<double> held;  // what each other device spent waiting for d
    for (const v1::DeviceStep* v : devices) {
      if (v == d || v->step_time_ns() <= 0) continue;
      const bool for_d = v->waited_for_rank() == static_cast<int32_t>(d->rank());
      held.push_back(for_d ? static_cast<double>(v->wait_ns()) / v->step_time_ns() : 0.0);
    }
    sample.held_up = Median(std::move(held));
    std::deque<DeviceSample>& window = device_history_[d->rank()];
    window.push_back(sample);
    while (window.size() > history_size_) window.pop_front();
  }
  // Own time against the stage peers' of the same step (owns are final now).
  for (const v1::DeviceStep* d : devices) {
    auto it = device_history_.find(d->rank());
    if (it == device_history_.end() || it->second.back().step != step.step()) continue;
    DeviceSample& sample = it->second.back();
    std::vector<double> peers;
    for (const v1::DeviceStep* p : devices) {
      if (p == d || p->stage() != d->stage()) continue;
      auto peer = device_history_.find(p->rank());
      if (peer != device_history_.end() && peer->second.back().step == step.step()) {
        peers.push_back(peer->second.back().own);
      }
    }
    const double median = Median(std::move(peers));
    sample.own_ratio = median > 0 ? sample.own / median : 0;
  }

  for (const v1::StageStep& s : step.stages()) {
    if (s.ranks_size() == 0) continue;
    StageSample sample;
    sample.step = step.step();
    sample.ranks.assign(s.ranks().begin(), s.ranks().end());
    sample.flops = static_cast<double>(s.flops());
    sample.compute = static_cast<double>(s.compute_ns());
    sample.bubble = static_cast<double>(s.bubble_ns());
    std::deque<StageSample>& window = stage_history_[s.stage()];
    window.push_back(std::move(sample));
    while (window.size() > history_size_) window.pop_front();
  }
  // Stages that left the report keep no stale window.
  for (auto it = stage_history_.begin(); it != stage_history_.end();) {
    it = it->second.back().step == step.step() ? std::next(it) : stage_history_.erase(it);
  }

  // A link's duration runs from the later endpoint's arrival only when
  // neither waited long: where an endpoint waited longer than it
  // transferred, the duration measures the wait.
  auto dominated_by_waiting = [&](uint32_t rank) {
    auto it = by_rank.find(rank);
    return it == by_rank.end() || it->second->wait_ns() > it->second->transfer_ns();
  };
  for (const v1::LinkStep& l : step.links()) {
    LinkSample sample;
    sample.step = step.step();
    sample.type = l.link_type();
    sample.bytes = static_cast<double>(l.bytes());
    sample.bytes_per_second = l.bytes_per_second();
    sample.usable = l.bytes() >= rules_.slow_link().min_bytes() && l.bytes_per_second() > 0 &&
                    !dominated_by_waiting(l.src_rank()) && !dominated_by_waiting(l.dst_rank());
    std::deque<LinkSample>& window =
        link_history_[absl::StrFormat("%s %010u %010u", l.link_type(), l.src_rank(), l.dst_rank())];
    window.push_back(std::move(sample));
  }
  for (auto it = link_history_.begin(); it != link_history_.end();) {
    std::deque<LinkSample>& window = it->second;
    while (!window.empty() && window.front().step + rules_.window_steps() <= step.step()) {
      window.pop_front();
    }
    it = window.empty() ? link_history_.erase(it) : std::next(it);
  }
}

const std::deque<AlertEngine::DeviceSample>* AlertEngine::DeviceWindow(uint32_t rank) const {
  auto it = device_history_.find(rank);
  return it == device_history_.end() ? nullptr : &it->second;
}

AlertEngine::HoldUp AlertEngine::HeldUp(uint32_t rank,
                                        const std::deque<DeviceSample>& history) const {
  const v1::CollectiveWaitRule& rule = rules_.collective_wait();
  auto held_up = [](const DeviceSample& s) { return s.held_up; };
  HoldUp out;
  const size_t streak = rule.streak_steps();
  const size_t sustained = rule.sustained_steps();
  const size_t recent = std::min<size_t>(rules_.window_steps(), history.size());
  if (history.size() >= streak) {
    const std::vector<double> last = Last(history, streak, held_up);
    if (*std::min_element(last.begin(), last.end()) >= rule.min_wait_fraction()) {
      out = {true, true, streak, Median(last), rule.min_wait_fraction(), 0};
    }
  }
  // The recent median: without half the sustained margin there, the cause
  // is gone whatever the long window still remembers.
  const double recent_median = Median(Last(history, recent, held_up));
  const bool recent_present = recent_median >= rule.sustained_wait_fraction() / 2;
  if (!out.holds && recent_present && history.size() >= sustained) {
    const double median = Median(Last(history, sustained, held_up));
    if (median >= rule.sustained_wait_fraction()) {
      out = {true, true, sustained, median, rule.sustained_wait_fraction(), 0};
    }
  }
  // The late-arrival CUSUM: a small slowdown that holds nobody up for long
  // in any one step but makes the device the last arriver again and again.
  const LateArrivalDetector::State* late = late_arrivals_.Find(rank);
  if (!out.holds && late != nullptr && late->alarmed) {
    out.holds = true;
    out.present = true;
    out.window = late->steps;
    out.fraction = Median(Last(history, std::max<size_t>(late->steps, 1), held_up));
    out.threshold = rule.late_arrival_threshold();
    out.onset = late->onset_step;
    out.late_arrival_evidence = late->Evidence(late_arrivals_.devices());
    return out;
  }
  if (!out.holds) {
    out.window = recent;
    out.fraction = recent_median;
    out.present = recent_present;
  }
  if (!out.holds) out.threshold = rule.min_wait_fraction();
  out.onset = TrailingOnset(history, std::max<size_t>(out.window, 1),
                            [&](const DeviceSample& s) { return s.held_up >= out.threshold; });
  return out;
}

void AlertEngine::Judge(const std::string& rule, const v1::Hysteresis& hysteresis,
                        std::vector<Verdict> verdicts, uint64_t step, int64_t now_unix_ns,
                        std::vector<v1::Alert>* out) {
  std::map<std::string, const Verdict*> by_subject;
  for (const Verdict& v : verdicts) {
    by_subject[v.subject] = &v;
    if (v.holds) tracks_.try_emplace(TrackKey(rule, v.subject));
  }
  bool held = false;
  for (auto it = tracks_.lower_bound(TrackKey(rule, ""));
       it != tracks_.end() && it->first.first == rule;) {
    auto found = by_subject.find(it->first.second);
    const Verdict* verdict = found == by_subject.end() ? nullptr : found->second;
    Track& track = it->second;
    held |= Advance(&track, verdict, hysteresis, step, now_unix_ns, out);
    const bool idle = !track.open && track.hold_run == 0;
    it = idle ? tracks_.erase(it) : std::next(it);
  }
  if (held) NoteHolding(rule);
}

bool AlertEngine::Advance(Track* track, const Verdict* verdict, const v1::Hysteresis& hysteresis,
                          uint64_t step, int64_t now_unix_ns, std::vector<v1::Alert>* out) {
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
    const Verdict& details = track->last_holding;
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

void AlertEngine::UpdateLostDevices(const v1::StepReport& step, int64_t now_unix_ns,
                                    std::vector<v1::Alert>* out) {
  if (!rules_.lost_device().enabled()) return;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    auto it = lost_.find(d->rank());
    if (it == lost_.end()) continue;
    // A step its stream had already reported before it closed: old news.
    if (it->second.stream_lost_after && step.step() <= *it->second.stream_lost_after) continue;
    if (it->second.open) {
      out->push_back(Clear(it->second.raised, nullptr, step.step(), now_unix_ns,
                           absl::StrFormat("rank %u reports steps again", d->rank())));
    }
    lost_.erase(it);
  }
  for (uint32_t rank : step.missing_ranks()) {
    LostState& lost = lost_[rank];
    ++lost.missing_run;
    if (lost.open || lost.missing_run < rules_.lost_device().missing_steps()) continue;
    v1::Alert alert = BaseAlert(kRuleLostDevice);
    alert.add_ranks(rank);
    alert.set_cause_rank(static_cast<int32_t>(rank));
    alert.set_metric("missing_steps");
    alert.set_observed(lost.missing_run);
    alert.set_baseline(0);
    alert.set_threshold(rules_.lost_device().missing_steps());
    const uint64_t onset =
        step.step() + 1 >= lost.missing_run ? step.step() + 1 - lost.missing_run : 0;
    lost.raised = Raise(alert, step.step(), onset, now_unix_ns,
                        absl::StrFormat("rank %u is lost: it reported none of the last %u "
                                        "closed steps since step %u",
                                        rank, lost.missing_run, onset));
    lost.open = true;
    out->push_back(lost.raised);
  }
}

std::vector<v1::Alert> AlertEngine::OnDeviceLost(uint32_t rank, uint64_t last_step,
                                                 int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  if (!rules_.lost_device().enabled()) return out;
  LostState& lost = lost_[rank];
  if (lost.open) return out;
  v1::Alert alert = BaseAlert(kRuleLostDevice);
  alert.add_ranks(rank);
  alert.set_cause_rank(static_cast<int32_t>(rank));
  alert.set_metric("stream");
  alert.set_observed(1);
  alert.set_baseline(0);
  alert.set_threshold(1);
  lost.raised = Raise(alert, last_step, last_step, now_unix_ns,
                      absl::StrFormat("rank %u is lost: its stream closed without goodbye "
                                      "after step %u",
                                      rank, last_step));
  lost.open = true;
  lost.stream_lost_after = last_step;
  out.push_back(lost.raised);
  return out;
}

std::vector<v1::Alert> AlertEngine::OnDeviceBack(uint32_t rank, uint64_t step,
                                                 int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  auto it = lost_.find(rank);
  if (it == lost_.end()) return out;
  if (it->second.open) {
    out.push_back(Clear(it->second.raised, nullptr, step, now_unix_ns,
                        absl::StrFormat("rank %u is back", rank)));
  }
  lost_.erase(it);
  return out;
}

std::vector<v1::Alert> AlertEngine::OnExternalFinding(const ExternalFinding& finding,
                                                      int64_t now_unix_ns) {
  return Judge(finding, rules_.hysteresis(), now_unix_ns);
}

std::vector<v1::Alert> AlertEngine::OnLossEpoch(const LossTracker::ClosedEpoch& epoch,
                                                uint64_t step, int64_t now_unix_ns) {
  std::vector<v1::Alert> out;
  const v1::DifficultItemRule& rule = rules_.difficult_item();
  if (!rule.enabled()) return out;
  // The epochs are the persistence test: raise at once; clear once the item
  // stayed out of the top-N as many epochs in a row (no churn at its edge).
  v1::Hysteresis per_epoch;
  per_epoch.set_raise_after_steps(1);
  per_epoch.set_clear_after_steps(rule.consecutive_epochs());
  const std::string name(kRuleDifficultItem);
  std::set<std::string> holding;
  auto append = [&out](std::vector<v1::Alert> alerts) {
    for (v1::Alert& alert : alerts) out.push_back(std::move(alert));
  };
  for (const LossTracker::ClosedItem& item : epoch.items) {
    const v1::ItemScore& score = item.score;
    const std::string subject = absl::StrCat("item ", score.item());
    auto track = tracks_.find(TrackKey(name, subject));
    const bool open = track != tracks_.end() && track->second.open;
    if (item.epochs_in_top < rule.consecutive_epochs() && !open) continue;
    ExternalFinding finding;
    finding.rule = name;
    finding.subject = subject;
    finding.item = score.item();
    finding.step = step;
    finding.metric = "epochs_in_top";
    finding.observed = item.epochs_in_top;
    finding.threshold = rule.consecutive_epochs();
    finding.baseline = score.contribution();
    finding.holds = true;
    finding.message = absl::StrCat(
        "item ", score.item(), " (label ", score.label(), ", predicted ", score.prediction(),
        ", rank ", score.rank(), ") has been in the top ", epoch.top_n, " loss contribution for ",
        item.epochs_in_top, " epochs running: a candidate mislabeled or ambiguous item");
    holding.insert(finding.subject);
    append(Judge(finding, per_epoch, now_unix_ns));
  }
  std::vector<std::string> left;
  for (const auto& [key, track] : tracks_) {
    if (key.first == name && !holding.count(key.second)) left.push_back(key.second);
  }
  for (const std::string& subject : left) {
    ExternalFinding finding;
    finding.rule = name;
    finding.subject = subject;
    finding.step = step;
    finding.message = absl::StrCat(subject, " left the loss-contribution top ", epoch.top_n);
    append(Judge(finding, per_epoch, now_unix_ns));
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
  Verdict v;
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
  for (const auto& [rank, lost] : lost_) {
    if (lost.open) causes.push_back(&lost.raised);
  }
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
  for (const auto& [rank, lost] : lost_) {
    if (lost.open) open.push_back(lost.raised);
  }
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
