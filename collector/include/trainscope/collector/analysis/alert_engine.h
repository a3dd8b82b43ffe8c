// Turns the verdicts of one job's alert rules into alerts: one alert per
// (rule, subject) raised after the rule has held for `raise_after_steps`
// consecutive steps and cleared after it has not held for
// `clear_after_steps` (the clear repeats the raise's alert_id); an alert
// raised while an alert naming its cause is open is filed under it
// (Alert.caused_by_alert_id, see IsEffectOf in alert_engine.cc).
//
// The rules are units of their own: the step rules (alert_rule_registry.h)
// read the job's shared history windows (RuleHistory), which the engine
// updates once per closed step; lost_device (LostDeviceRule) is raised at
// once; difficult_item (DifficultItemRule) is judged on the loss epochs;
// external rules (the loss-contribution ones) hand in their findings
// (ExternalFinding). What stays here is what every rule shares: the
// hysteresis, alert ids and the grouping of effects under causes.
//
// Usage:
//   AlertEngine engine(job_id, rules);          // rules from LoadRulesFile()
//   for each closed StepReport:
//     for (v1::Alert& a : engine.OnStep(report, NowUnixNs())) Publish(a);
//     halt_tracker.OnStep(report.step(), engine.HoldingRules(),
//                         StepEfficiency(report));
//   on a stream closed without goodbye:
//     Publish(engine.OnDeviceLost(rank, last_step, NowUnixNs()));
//
// What the rules read from a StepReport: devices (complete ones only) with
// rank, stage, step_time_ns, data_wait_ns, wait_ns, waited_for_rank,
// flops, flops_per_second; links (link_type, bytes, bytes_per_second);
// stages (stage, ranks, flops, compute_ns, bubble_ns); missing_ranks.
//
// Threading: not thread-safe; one thread owns it (in the collector, the
// job's pipeline thread, which also owns the feed, the index and the halt).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_ENGINE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_ENGINE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/collector/analysis/alert_rule.h"
#include "trainscope/collector/analysis/difficult_item_rule.h"
#include "trainscope/collector/analysis/external_finding.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/collector/analysis/lost_device_rule.h"
#include "trainscope/collector/analysis/rule_history.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class AlertEngine {
 public:
  AlertEngine(std::string job_id, v1::RulesConfig rules);

  // Evaluates every enabled rule on a closed step; returns the alerts that
  // changed state (RAISED or CLEARED), in rule order.
  std::vector<v1::Alert> OnStep(const v1::StepReport& step, int64_t now_unix_ns);

  // A device's stream closed without goodbye or its connection was lost, and
  // the caller judged it lost (JobPipeline waits for its grace first):
  // raises lost_device at once (no hysteresis). Empty if already raised.
  // Closed steps up to `last_step` that still count the device complete do
  // not clear it; a later one, or OnDeviceBack, does.
  std::vector<v1::Alert> OnDeviceLost(uint32_t rank, uint64_t last_step, int64_t now_unix_ns);
  // The device is back (a new stream): clears its lost_device alert.
  std::vector<v1::Alert> OnDeviceBack(uint32_t rank, uint64_t step, int64_t now_unix_ns);

  // An external rule's verdict for one subject.
  std::vector<v1::Alert> OnExternalFinding(const ExternalFinding& finding, int64_t now_unix_ns = 0);

  // An epoch of the loss-contribution top-N closed (LossTracker): the
  // difficult_item rule raises each item in it for consecutive_epochs epochs
  // running, and clears a raised item once it stayed out of it as many epochs
  // running. `step` is the job's latest.
  std::vector<v1::Alert> OnLossEpoch(const LossTracker::ClosedEpoch& epoch, uint64_t step,
                                     int64_t now_unix_ns = 0);

  // Rules whose condition (the voted one, before the raise/clear counting)
  // held at the last OnStep (or was neutral with its alert open), plus lost_device while a device
  // is lost and external rules whose last finding held; for the halt policy.
  const std::vector<std::string>& HoldingRules() const { return holding_rules_; }

  // Raised and not yet cleared, ordered by alert_id.
  std::vector<v1::Alert> OpenAlerts() const;

  const v1::RulesConfig& rules() const { return rules_; }

 private:
  // Hysteresis state of one (rule, subject).
  struct Track {
    uint32_t hold_run = 0;   // consecutive holding steps
    uint32_t clear_run = 0;  // consecutive steps without the cause present
    uint64_t onset_step = 0;
    uint64_t last_hold_step = 0;
    bool open = false;
    RuleVerdict last_holding;  // details for a raise on a voted step
    v1::Alert raised;
  };
  using TrackKey = std::pair<std::string, std::string>;  // (rule, subject)

  // Applies hysteresis to one rule's verdicts (subjects of the rule without
  // a verdict count as not holding); appends state changes.
  void Judge(const std::string& rule, const v1::Hysteresis& hysteresis,
             std::vector<RuleVerdict> verdicts, uint64_t step, int64_t now_unix_ns,
             std::vector<v1::Alert>* out);
  // The same for one external finding.
  std::vector<v1::Alert> Judge(const ExternalFinding& finding, const v1::Hysteresis& hysteresis,
                               int64_t now_unix_ns);
  // Advances one track by one evaluation; returns whether its condition held.
  bool Advance(Track* track, const RuleVerdict* verdict, const v1::Hysteresis& hysteresis,
               uint64_t step, int64_t now_unix_ns, std::vector<v1::Alert>* out);
  // Files a lost_device raise or clear.
  void File(const LostDeviceRule::Change& change, int64_t now_unix_ns, std::vector<v1::Alert>* out);
  v1::Alert Raise(v1::Alert alert, uint64_t step, uint64_t onset_step, int64_t now_unix_ns,
                  const std::string& message);
  v1::Alert Clear(const v1::Alert& raised, const v1::Alert* now_values, uint64_t step,
                  int64_t now_unix_ns, const std::string& message);
  void NoteHolding(const std::string& rule);
  // Files the alerts raised in `out` whose cause is an open alert's under
  // it (Alert.caused_by_alert_id): a straggler's lower FLOPS, the job's
  // step-time regression, its second who-waits-for-whom rule.
  void GroupUnderCauses(std::vector<v1::Alert>* out);

  const std::string job_id_;
  const v1::RulesConfig rules_;
  RuleHistory history_;
  std::vector<std::unique_ptr<AlertRule>> step_rules_;  // enabled, in evaluation order
  LostDeviceRule lost_devices_;
  DifficultItemRule difficult_items_;
  uint64_t next_alert_id_ = 1;
  std::map<TrackKey, Track> tracks_;
  std::map<uint32_t, v1::Alert> lost_alerts_;  // open lost_device alerts by rank
  std::set<TrackKey> external_holding_;
  std::vector<std::string> holding_rules_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_ENGINE_H_
