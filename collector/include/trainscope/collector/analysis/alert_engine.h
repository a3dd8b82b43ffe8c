// Evaluates the alert rules of one job on each closed step and turns their
// verdicts into alerts: one alert per (rule, subject) raised after the rule
// has held for `raise_after_steps` consecutive steps and cleared after it has
// not held for `clear_after_steps` (the clear repeats the raise's alert_id).
//
// Noise: on a shared host single steps jitter by 2x, and the late arriver of
// a collective moves from rank to rank and stays a few steps. So rules judge
// per-device WINDOWED statistics (medians over the last `window_steps`,
// default 5, of own time = step time - collective wait - data wait, waits,
// FLOPS on a longer window) against the other devices' window medians; the
// who-waits-for-whom rules (collective_wait, straggler) judge a device's
// hold-up of the others over a streak of steps and over a long window (see
// CollectiveWaitRule). A test is then counted plainly: raised after
// raise_after_steps consecutive holding steps, cleared after
// clear_after_steps steps in which the cause is no longer present.
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
// What it reads from a StepReport: devices (complete ones only) with rank,
// stage, step_time_ns, data_wait_ns, wait_ns, waited_for_rank,
// flops, flops_per_second; links (link_type, bytes, bytes_per_second);
// stages (stage, ranks, flops, compute_ns, bubble_ns); missing_ranks.
//
// Threading: not thread-safe; one thread owns it (in the collector, the
// job's pipeline thread, which also owns the feed, the index and the halt).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_ENGINE_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_ENGINE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/collector/analysis/late_arrival_detector.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

// A verdict from a rule evaluated outside the engine (the loss-contribution
// rules); goes through the same hysteresis (the top-level one) as the
// built-in rules, one finding per evaluation.
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
  std::vector<v1::Alert> Judge(const ExternalFinding& finding, const v1::Hysteresis& hysteresis,
                               int64_t now_unix_ns);

  // One rule's (windowed) test on one subject.
  struct Verdict {
    std::string subject;  // unique within the rule, orders the output
    bool holds = false;   // evidence for raising
    // Without the vote: whether the cause is still present (for clearing);
    // may be true while `holds` is not.
    bool present = false;
    std::optional<uint64_t> onset_step;  // the rule's own change point, if any
    v1::Alert alert;                     // rule-specific fields filled
    std::string what;                    // "rank 2 is a straggler"
    std::string values;                  // "compute 41.0 ms vs median 13.2 ms (z=9.1)"
  };
  // Hysteresis state of one (rule, subject).
  struct Track {
    uint32_t hold_run = 0;   // consecutive holding steps
    uint32_t clear_run = 0;  // consecutive steps without the cause present
    uint64_t onset_step = 0;
    uint64_t last_hold_step = 0;
    bool open = false;
    Verdict last_holding;  // details for a raise on a voted step
    v1::Alert raised;
  };
  using TrackKey = std::pair<std::string, std::string>;  // (rule, subject)

  // Per-rule evaluations on one step (complete devices only).
  std::vector<Verdict> LowFlops(const v1::StepReport& step) const;
  std::vector<Verdict> StageFlops(const v1::StepReport& step) const;
  std::vector<Verdict> Straggler(const v1::StepReport& step) const;
  std::vector<Verdict> CollectiveWait(const v1::StepReport& step) const;
  std::vector<Verdict> SlowLink(const v1::StepReport& step) const;
  std::vector<Verdict> PipelineBubble(const v1::StepReport& step) const;
  std::vector<Verdict> LoaderStall(const v1::StepReport& step) const;
  std::vector<Verdict> StepTimeRegression(const v1::StepReport& step);

  // Applies hysteresis to one rule's verdicts (subjects of the rule without
  // a verdict count as not holding); appends state changes.
  void Judge(const std::string& rule, const v1::Hysteresis& hysteresis,
             std::vector<Verdict> verdicts, uint64_t step, int64_t now_unix_ns,
             std::vector<v1::Alert>* out);
  // Advances one track by one evaluation; returns whether its condition held.
  bool Advance(Track* track, const Verdict* verdict, const v1::Hysteresis& hysteresis,
               uint64_t step, int64_t now_unix_ns, std::vector<v1::Alert>* out);
  void UpdateLostDevices(const v1::StepReport& step, int64_t now_unix_ns,
                         std::vector<v1::Alert>* out);
  // Appends the step's complete devices, stages and links to the windows.
  void UpdateHistory(const v1::StepReport& step);
  v1::Alert Raise(v1::Alert alert, uint64_t step, uint64_t onset_step, int64_t now_unix_ns,
                  const std::string& message);
  v1::Alert Clear(const v1::Alert& raised, const v1::Alert* now_values, uint64_t step,
                  int64_t now_unix_ns, const std::string& message);
  void NoteHolding(const std::string& rule);

  const std::string job_id_;
  const v1::RulesConfig rules_;
  uint64_t steps_seen_ = 0;
  uint64_t next_alert_id_ = 1;
  std::map<TrackKey, Track> tracks_;
  // One complete device step, as the windowed rules read it.
  struct DeviceSample {
    uint64_t step = 0;
    uint32_t stage = 0;
    double step_time = 0;
    double own = 0;  // step_time - wait - data_wait
    double wait = 0;
    double data_wait = 0;
    double flops_per_second = 0;  // 0: no FLOPs counted
    int32_t waited_for = -1;
    // The others' median fraction of their step spent waiting for this device.
    double held_up = 0;
    // Own time over the median of its stage peers' in this step (0: no peers).
    double own_ratio = 0;
  };
  struct StageSample {
    uint64_t step = 0;
    std::vector<uint32_t> ranks;
    double flops = 0;
    double compute = 0;
    double bubble = 0;
  };
  struct LinkSample {
    uint64_t step = 0;
    std::string type;
    double bytes = 0;
    double bytes_per_second = 0;
    bool usable = false;  // enough bytes and not dominated by waiting
  };
  // The last samples of one device (complete steps only).
  const std::deque<DeviceSample>* DeviceWindow(uint32_t rank) const;
  // collective_wait's tests on one device's hold-up of the others.
  struct HoldUp {
    bool holds = false;    // the fast, the sustained or the late-arrival test holds
    bool present = false;  // half the margin remains (keeps an open alert)
    size_t window = 0;     // the window of the test that decided
    double fraction = 0;   // the median hold-up over that window
    double threshold = 0;  // that test's threshold
    uint64_t onset = 0;    // first step of the trailing run over the threshold
    // Set when the late-arrival CUSUM decided: "last to arrive in ...".
    std::string late_arrival_evidence;
  };
  HoldUp HeldUp(uint32_t rank, const std::deque<DeviceSample>& history) const;
  // Files the alerts raised in `out` whose cause is an open alert's under
  // it (Alert.caused_by_alert_id): a straggler's lower FLOPS, the job's
  // step-time regression, its second who-waits-for-whom rule.
  void GroupUnderCauses(std::vector<v1::Alert>* out);
  size_t history_size_ = 0;  // samples kept: the longest window
  std::map<uint32_t, std::deque<DeviceSample>> device_history_;
  std::map<uint32_t, std::deque<StageSample>> stage_history_;
  // Per link (src, dst, type) key.
  std::map<std::string, std::deque<LinkSample>> link_history_;
  LateArrivalDetector late_arrivals_;
  // Step-time regression: the job step times collected for the baseline.
  std::vector<int64_t> baseline_samples_;
  double step_time_baseline_ns_ = 0;
  std::deque<std::pair<uint64_t, double>> recent_step_times_;  // (step, ns)
  // Lost devices: consecutive steps missing, open alert.
  struct LostState {
    uint32_t missing_run = 0;
    bool open = false;
    v1::Alert raised;
    // Raised by OnDeviceLost: the last step the stream reported. Steps up to
    // it may still close with the rank complete (the assembler lags the
    // streams); they do not mean the rank reports steps again.
    std::optional<uint64_t> stream_lost_after;
  };
  std::map<uint32_t, LostState> lost_;
  std::set<TrackKey> external_holding_;
  std::vector<std::string> holding_rules_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_ALERT_ENGINE_H_
