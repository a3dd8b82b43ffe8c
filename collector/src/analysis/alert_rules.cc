// AlertEngine's rule tests: each evaluates one rule on a closed step and its
// windows, returning one verdict per subject (see alert_engine.h).
#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "alert_engine_internal.h"
#include "trainscope/collector/analysis/alert_engine.h"
#include "trainscope/collector/analysis/rules_config.h"

namespace trainscope::collector {

using alert_internal::BaseAlert;
using alert_internal::CompleteDevices;
using alert_internal::FormatCount;
using alert_internal::FormatNs;
using alert_internal::FormatRate;
using alert_internal::JobStepTime;
using alert_internal::kLinkBytesRatio;
using alert_internal::kMadFloorFraction;
using alert_internal::kMadScale;
using alert_internal::Last;
using alert_internal::Mean;
using alert_internal::Median;
using alert_internal::RankList;
using alert_internal::RankSubject;
using alert_internal::StageSubject;
using alert_internal::TrailingOnset;

std::vector<AlertEngine::Verdict> AlertEngine::LowFlops(const v1::StepReport& step) const {
  const v1::LowFlopsRule& rule = rules_.low_flops();
  const size_t window = rule.window_steps();
  // Window medians of the devices in this step, by stage: stages run
  // different layers at different rates.
  std::map<uint32_t, std::vector<std::pair<const v1::DeviceStep*, double>>> by_stage;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    const auto* history = DeviceWindow(d->rank());
    if (history == nullptr || history->size() < window) continue;
    std::vector<double> rates =
        Last(*history, window, [](const DeviceSample& s) { return s.flops_per_second; });
    rates.erase(std::remove(rates.begin(), rates.end(), 0.0), rates.end());
    if (rates.size() * 2 < window) continue;
    by_stage[d->stage()].emplace_back(d, Median(std::move(rates)));
  }
  std::vector<Verdict> out;
  for (const auto& [stage, devices] : by_stage) {
    if (devices.size() < 2) continue;
    for (const auto& [d, rate] : devices) {
      std::vector<double> peers;
      for (const auto& [p, peer_rate] : devices) {
        if (p != d) peers.push_back(peer_rate);
      }
      const double peers_median = Median(std::move(peers));
      const double threshold = (1 - rule.below_mean()) * peers_median;
      Verdict v;
      v.subject = RankSubject(d->rank());
      v.holds = peers_median > 0 && rate <= threshold;
      v.present = peers_median > 0 && rate <= (1 - rule.below_mean() / 2) * peers_median;
      v.onset_step = TrailingOnset(*DeviceWindow(d->rank()), window, [&](const DeviceSample& s) {
        return s.flops_per_second > 0 && s.flops_per_second <= threshold;
      });
      v.alert = BaseAlert(kRuleLowFlops);
      v.alert.add_ranks(d->rank());
      v.alert.set_cause_rank(static_cast<int32_t>(d->rank()));
      v.alert.set_stage(static_cast<int32_t>(stage));
      v.alert.set_metric("flops_per_second");
      v.alert.set_observed(rate);
      v.alert.set_baseline(peers_median);
      v.alert.set_threshold(threshold);
      v.what = absl::StrFormat("rank %u achieves low FLOPS", d->rank());
      v.values = absl::StrFormat(
          "median %s over %zu steps vs peers' %s (%.0f%% below)", FormatRate(rate, "FLOPS"), window,
          FormatRate(peers_median, "FLOPS"), 100.0 * (1 - rate / peers_median));
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::StageFlops(const v1::StepReport& step) const {
  const size_t window = rules_.window_steps();
  std::vector<std::pair<uint32_t, double>> stages;  // (stage, window median FLOPs)
  std::vector<double> medians;
  for (const auto& [stage, history] : stage_history_) {
    if (history.size() < window) continue;
    const double flops =
        Median(Last(history, window, [](const StageSample& s) { return s.flops; }));
    if (flops <= 0) continue;
    stages.emplace_back(stage, flops);
    medians.push_back(flops);
  }
  std::vector<Verdict> out;
  if (stages.size() < 2) return out;
  const double mean = Mean(medians);
  const double threshold = (1 + rules_.stage_flops_imbalance().above_mean()) * mean;
  for (const auto& [stage, flops] : stages) {
    const std::deque<StageSample>& history = stage_history_.at(stage);
    const std::vector<uint32_t>& ranks = history.back().ranks;
    Verdict v;
    v.subject = StageSubject(stage);
    v.holds = flops >= threshold;
    v.present = v.holds;
    v.onset_step =
        TrailingOnset(history, window, [&](const StageSample& s) { return s.flops >= threshold; });
    v.alert = BaseAlert(kRuleStageFlopsImbalance);
    for (uint32_t r : ranks) v.alert.add_ranks(r);
    if (ranks.size() == 1) v.alert.set_cause_rank(static_cast<int32_t>(ranks[0]));
    v.alert.set_stage(static_cast<int32_t>(stage));
    v.alert.set_metric("flops");
    v.alert.set_observed(flops);
    v.alert.set_baseline(mean);
    v.alert.set_threshold(threshold);
    v.what = absl::StrFormat("stage %u (ranks %s) carries too many FLOPs", stage, RankList(ranks));
    v.values = absl::StrFormat("%s FLOPs vs stage mean %s (%.0f%% above)", FormatCount(flops),
                               FormatCount(mean), 100.0 * (flops / mean - 1));
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::Straggler(const v1::StepReport& step) const {
  const v1::StragglerRule& rule = rules_.straggler();
  // Devices of different pipeline stages do different work: compare within
  // a stage only. Own time leaves out what the device waited for (others,
  // data): a straggler's own time grows, its victims' does not.
  std::map<uint32_t, std::vector<const v1::DeviceStep*>> by_stage;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    const auto* history = DeviceWindow(d->rank());
    if (history != nullptr && history->size() >= rule.window_steps()) {
      by_stage[d->stage()].push_back(d);
    }
  }
  auto own = [](const DeviceSample& s) { return s.own; };
  std::vector<Verdict> out;
  for (const auto& [stage, devices] : by_stage) {
    if (devices.size() < 2) continue;
    for (const v1::DeviceStep* d : devices) {
      const uint32_t rank = d->rank();
      const std::deque<DeviceSample>& history = *DeviceWindow(rank);
      const HoldUp held = HeldUp(rank, history);
      // The streak test: clearly slower and holding the others up, step
      // after step (see StragglerRule).
      auto streaking = [&](const DeviceSample& s) {
        return s.own_ratio >= 1 + rule.streak_excess() && s.held_up >= rule.streak_wait_fraction();
      };
      const size_t streak_steps = rules_.collective_wait().streak_steps();
      const bool streak = history.size() >= streak_steps &&
                          std::all_of(history.end() - static_cast<std::ptrdiff_t>(streak_steps),
                                      history.end(), streaking);
      if (!held.holds && !held.present && !streak) continue;
      // Own time over the window of the hold-up test that decided (the
      // sustained test looks at a long window, so does this one).
      const size_t window = std::max<size_t>(rule.window_steps(), held.window);
      const double mine = Median(Last(history, window, own));
      std::vector<double> peer_medians;
      std::vector<double> pool;
      for (const v1::DeviceStep* p : devices) {
        if (p == d) continue;
        std::vector<double> owns = Last(*DeviceWindow(p->rank()), window, own);
        peer_medians.push_back(Median(owns));
        pool.insert(pool.end(), owns.begin(), owns.end());
      }
      const double median = Median(std::move(peer_medians));
      if (median <= 0) continue;
      const double pool_median = Median(pool);
      std::vector<double> deviations;
      for (double x : pool) deviations.push_back(std::fabs(x - pool_median));
      const double mad = std::max(Median(std::move(deviations)), kMadFloorFraction * median);
      // The spread of a window median: about 1.25 sigma / sqrt(n).
      const double sigma = kMadScale * mad * 1.25 / std::sqrt(static_cast<double>(window));
      const double z = (mine - median) / sigma;
      const double threshold =
          std::max(median + rule.z_threshold() * sigma, (1 + rule.min_excess()) * median);
      Verdict v;
      v.subject = RankSubject(rank);
      v.holds = (held.holds && mine >= threshold) || streak;
      // Hysteresis band: an open alert stays while half the margin remains.
      v.present = (held.present && mine >= (median + threshold) / 2) || streak;
      v.onset_step =
          held.holds || !streak ? held.onset : TrailingOnset(history, history.size(), streaking);
      v.alert = BaseAlert(kRuleStraggler);
      v.alert.add_ranks(rank);
      v.alert.set_cause_rank(static_cast<int32_t>(rank));
      v.alert.set_stage(static_cast<int32_t>(stage));
      // Those who waited for it in this step are its victims.
      for (const v1::DeviceStep& w : step.devices()) {
        if (w.rank() != rank && w.waited_for_rank() == static_cast<int32_t>(rank) &&
            w.wait_ns() > 0) {
          v.alert.add_victim_ranks(w.rank());
        }
      }
      v.alert.set_metric("own_ns");
      v.alert.set_observed(mine);
      v.alert.set_baseline(median);
      v.alert.set_threshold(threshold);
      v.what = absl::StrFormat("rank %u is a straggler", rank);
      v.values =
          absl::StrFormat("own time (step minus waits) %s vs peers' %s over %zu steps (z=%.1f); %s",
                          FormatNs(mine), FormatNs(median), window, z,
                          held.late_arrival_evidence.empty()
                              ? absl::StrFormat("the others wait %.0f%% of their step for it",
                                                100.0 * held.fraction)
                              : held.late_arrival_evidence);
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::CollectiveWait(const v1::StepReport& step) const {
  std::vector<Verdict> out;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    const uint32_t cause = d->rank();
    const auto* history = DeviceWindow(cause);
    if (history == nullptr) continue;
    const HoldUp held = HeldUp(cause, *history);
    if (!held.holds && !held.present) continue;
    std::vector<uint32_t> victims;
    for (const v1::DeviceStep& w : step.devices()) {
      if (w.rank() != cause && w.waited_for_rank() == static_cast<int32_t>(cause) &&
          w.wait_ns() > 0) {
        victims.push_back(w.rank());
      }
    }
    const double threshold = held.threshold;
    Verdict v;
    v.subject = RankSubject(cause);
    v.holds = held.holds;
    v.present = held.present;
    v.onset_step = held.onset;
    v.alert = BaseAlert(kRuleCollectiveWait);
    v.alert.add_ranks(cause);
    v.alert.set_cause_rank(static_cast<int32_t>(cause));
    for (uint32_t r : victims) v.alert.add_victim_ranks(r);
    v.alert.set_metric("wait_fraction");
    v.alert.set_observed(held.fraction);
    v.alert.set_baseline(0);
    v.alert.set_threshold(threshold);
    v.what = victims.empty() ? absl::StrFormat("the others wait for rank %u in collectives", cause)
                             : absl::StrFormat("rank%s %s wait%s for rank %u in collectives",
                                               victims.size() == 1 ? "" : "s", RankList(victims),
                                               victims.size() == 1 ? "s" : "", cause);
    v.values =
        held.late_arrival_evidence.empty()
            ? absl::StrFormat("a median %.0f%% of their step over %zu steps (threshold %.0f%%)",
                              100.0 * held.fraction, held.window, 100.0 * threshold)
            : held.late_arrival_evidence;
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::SlowLink(const v1::StepReport& step) const {
  const v1::SlowLinkRule& rule = rules_.slow_link();
  const size_t window = rules_.window_steps();
  // A link is judged on its usable samples in the window: at least a
  // majority of the window.
  struct Judged {
    std::string key;
    const std::deque<LinkSample>* history;
    double bytes;
    double rate;
  };
  std::map<std::string, std::vector<Judged>> by_type;
  for (const v1::LinkStep& l : step.links()) {
    if (l.link_type() == "collective" && !rule.collective_links()) continue;
    const std::string key =
        absl::StrFormat("%s %010u %010u", l.link_type(), l.src_rank(), l.dst_rank());
    auto it = link_history_.find(key);
    if (it == link_history_.end()) continue;
    std::vector<double> rates;
    std::vector<double> bytes;
    for (const LinkSample& s : it->second) {
      if (!s.usable) continue;
      rates.push_back(s.bytes_per_second);
      bytes.push_back(s.bytes);
    }
    if (rates.size() * 2 <= window) continue;
    by_type[l.link_type()].push_back(
        {key, &it->second, Median(std::move(bytes)), Median(std::move(rates))});
  }
  std::vector<Verdict> out;
  for (const auto& [type, links] : by_type) {
    for (const Judged& link : links) {
      // Peers: links of the same type with similar transfers (a small
      // transfer is latency-bound and slow by nature).
      std::vector<double> peer_rates;
      for (const Judged& p : links) {
        if (&p == &link) continue;
        const double ratio = p.bytes / link.bytes;
        if (ratio <= kLinkBytesRatio && ratio >= 1 / kLinkBytesRatio) {
          peer_rates.push_back(p.rate);
        }
      }
      // With fewer than two peers the median is one of the two compared.
      if (peer_rates.size() < 2) continue;
      const double median = Median(std::move(peer_rates));
      const double threshold = rule.below_median() * median;
      uint32_t src = 0;
      uint32_t dst = 0;
      for (const v1::LinkStep& l : step.links()) {
        if (absl::StrFormat("%s %010u %010u", l.link_type(), l.src_rank(), l.dst_rank()) ==
            link.key) {
          src = l.src_rank();
          dst = l.dst_rank();
        }
      }
      Verdict v;
      v.subject = link.key;
      v.holds = link.rate < threshold;
      v.present = v.holds;
      v.onset_step = TrailingOnset(*link.history, window, [&](const LinkSample& s) {
        return !s.usable || s.bytes_per_second < threshold;
      });
      v.alert = BaseAlert(kRuleSlowLink);
      v.alert.add_ranks(src);
      v.alert.add_ranks(dst);
      v.alert.set_link_src_rank(static_cast<int32_t>(src));
      v.alert.set_link_dst_rank(static_cast<int32_t>(dst));
      v.alert.set_metric("bytes_per_second");
      v.alert.set_observed(link.rate);
      v.alert.set_baseline(median);
      v.alert.set_threshold(threshold);
      v.what = absl::StrFormat("link %u->%u (%s) is slow", src, dst, type);
      v.values =
          absl::StrFormat("median %s vs %s of %zu similar %s links", FormatRate(link.rate, "B/s"),
                          FormatRate(median, "B/s"), links.size(), type);
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::PipelineBubble(const v1::StepReport& step) const {
  const v1::PipelineBubbleRule& rule = rules_.pipeline_bubble();
  const size_t window = rules_.window_steps();
  struct Stage {
    uint32_t stage;
    const std::deque<StageSample>* history;
    double compute;  // window medians
    double bubble;
  };
  std::vector<Stage> stages;
  std::vector<double> computes;
  std::vector<double> bubbles;
  for (const auto& [stage, history] : stage_history_) {
    if (history.size() < window) continue;
    const double compute =
        Median(Last(history, window, [](const StageSample& s) { return s.compute; }));
    const double bubble =
        Median(Last(history, window, [](const StageSample& s) { return s.bubble; }));
    stages.push_back({stage, &history, compute, bubble});
    computes.push_back(compute);
    bubbles.push_back(bubble);
  }
  std::vector<Verdict> out;
  if (stages.size() < 2) return out;
  const double mean_compute = Mean(computes);
  const double mean_bubble = Mean(bubbles);
  std::vector<double> step_times;
  for (const auto& [rank, history] : device_history_) {
    for (double t : Last(history, window, [](const DeviceSample& s) { return s.step_time; })) {
      step_times.push_back(t);
    }
  }
  const double step_time = Median(std::move(step_times));
  const double compute_threshold = (1 + rule.compute_above_mean()) * mean_compute;
  const double bubble_threshold =
      std::max(rule.bubble_fraction() * step_time, (1 + rule.bubble_above_mean()) * mean_bubble);
  // Hysteresis bands: an open alert stays while half the margin remains.
  const double compute_band = (1 + rule.compute_above_mean() / 2) * mean_compute;
  const double bubble_band = std::max(rule.bubble_fraction() / 2 * step_time,
                                      (1 + rule.bubble_above_mean() / 2) * mean_bubble);
  // An overloaded stage makes the others idle: name the overloaded one, not
  // its victims' bubbles (judged with the band, so that a stage near the
  // threshold does not flip the rule between its two readings).
  bool any_imbalanced = false;
  for (const Stage& s : stages) {
    if (mean_compute > 0 && s.compute >= compute_band) any_imbalanced = true;
  }
  for (const Stage& s : stages) {
    const std::vector<uint32_t>& ranks = s.history->back().ranks;
    Verdict v;
    v.subject = StageSubject(s.stage);
    v.alert = BaseAlert(kRulePipelineBubble);
    for (uint32_t r : ranks) v.alert.add_ranks(r);
    if (ranks.size() == 1) v.alert.set_cause_rank(static_cast<int32_t>(ranks[0]));
    v.alert.set_stage(static_cast<int32_t>(s.stage));
    const std::string rank_list = RankList(ranks);
    if (any_imbalanced) {
      v.holds = s.compute >= compute_threshold;
      v.present = s.compute >= compute_band;
      v.onset_step = TrailingOnset(
          *s.history, window, [&](const StageSample& x) { return x.compute >= compute_threshold; });
      for (const Stage& other : stages) {
        if (&other == &s) continue;
        for (uint32_t r : other.history->back().ranks) v.alert.add_victim_ranks(r);
      }
      v.alert.set_metric("compute_ns");
      v.alert.set_observed(s.compute);
      v.alert.set_baseline(mean_compute);
      v.alert.set_threshold(compute_threshold);
      v.what = absl::StrFormat("stage %u (ranks %s) is overloaded and stalls the pipeline", s.stage,
                               rank_list);
      v.values = absl::StrFormat("compute median %s vs stage mean %s", FormatNs(s.compute),
                                 FormatNs(mean_compute));
    } else {
      v.holds = step_time > 0 && s.bubble >= bubble_threshold;
      v.present = step_time > 0 && s.bubble >= bubble_band;
      v.onset_step = TrailingOnset(
          *s.history, window, [&](const StageSample& x) { return x.bubble >= bubble_threshold; });
      v.alert.set_metric("bubble_ns");
      v.alert.set_observed(s.bubble);
      v.alert.set_baseline(mean_bubble);
      v.alert.set_threshold(bubble_threshold);
      v.what = absl::StrFormat("stage %u (ranks %s) idles in pipeline bubbles", s.stage, rank_list);
      v.values = absl::StrFormat("bubble median %s of a %s step vs stage mean %s",
                                 FormatNs(s.bubble), FormatNs(step_time), FormatNs(mean_bubble));
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::LoaderStall(const v1::StepReport& step) const {
  const v1::LoaderStallRule& rule = rules_.loader_stall();
  const size_t window = rules_.window_steps();
  std::vector<Verdict> out;
  for (const v1::DeviceStep* d : CompleteDevices(step)) {
    const auto* history = DeviceWindow(d->rank());
    if (history == nullptr || history->size() < window) continue;
    const double wait =
        Median(Last(*history, window, [](const DeviceSample& s) { return s.data_wait; }));
    const double step_time =
        Median(Last(*history, window, [](const DeviceSample& s) { return s.step_time; }));
    if (step_time <= 0) continue;
    const double threshold =
        std::max(static_cast<double>(rule.min_wait_ns()), rule.wait_fraction() * step_time);
    Verdict v;
    v.subject = RankSubject(d->rank());
    v.holds = wait >= threshold;
    v.present = wait >= threshold / 2;
    v.onset_step = TrailingOnset(*history, window,
                                 [&](const DeviceSample& s) { return s.data_wait >= threshold; });
    v.alert = BaseAlert(kRuleLoaderStall);
    v.alert.add_ranks(d->rank());
    v.alert.set_cause_rank(static_cast<int32_t>(d->rank()));
    v.alert.set_stage(static_cast<int32_t>(d->stage()));
    v.alert.set_metric("data_wait_ns");
    v.alert.set_observed(wait);
    v.alert.set_baseline(step_time);
    v.alert.set_threshold(threshold);
    v.what = absl::StrFormat("rank %u stalls on its data loader", d->rank());
    v.values = absl::StrFormat("data wait median %s of a %s step (%.0f%%)", FormatNs(wait),
                               FormatNs(step_time), 100.0 * wait / step_time);
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<AlertEngine::Verdict> AlertEngine::StepTimeRegression(const v1::StepReport& step) {
  const v1::StepTimeRegressionRule& rule = rules_.step_time_regression();
  std::vector<Verdict> out;
  if (steps_seen_ <= rule.warmup_steps()) return out;
  const std::vector<const v1::DeviceStep*> devices = CompleteDevices(step);
  const double this_step_time = JobStepTime(devices);
  if (this_step_time <= 0) return out;
  if (baseline_samples_.size() < rule.baseline_steps()) {
    baseline_samples_.push_back(static_cast<int64_t>(this_step_time));
    if (baseline_samples_.size() == rule.baseline_steps()) {
      step_time_baseline_ns_ = Median({baseline_samples_.begin(), baseline_samples_.end()});
    }
    return out;
  }
  // The job's step time jitters with every device's, and on a shared host
  // drifts for tens of steps. Two tests, as for collective_wait: fast, the
  // median of the last window_steps steps and this step rose by `rise`;
  // sustained, the median of the last sustained_steps steps rose by
  // `sustained_rise` and the recent median by half of it.
  recent_step_times_.emplace_back(step.step(), this_step_time);
  while (recent_step_times_.size() > rule.sustained_steps()) recent_step_times_.pop_front();
  auto median_of_last = [&](size_t n) {
    std::vector<double> times;
    const size_t from = recent_step_times_.size() > n ? recent_step_times_.size() - n : 0;
    for (size_t i = from; i < recent_step_times_.size(); ++i) {
      times.push_back(recent_step_times_[i].second);
    }
    return Median(std::move(times));
  };
  const double base = step_time_baseline_ns_;
  const double recent = median_of_last(rules_.window_steps());
  const double sustained = median_of_last(rule.sustained_steps());
  const bool fast =
      recent >= (1 + rule.rise()) * base && this_step_time >= (1 + rule.rise()) * base;
  const bool slow = recent_step_times_.size() >= rule.sustained_steps() &&
                    sustained >= (1 + rule.sustained_rise()) * base &&
                    recent >= (1 + rule.sustained_rise() / 2) * base;
  const double step_time = fast || !slow ? recent : sustained;
  const double threshold = (1 + (fast || !slow ? rule.rise() : rule.sustained_rise())) * base;
  Verdict v;
  v.subject = "job";
  v.holds = fast || slow;
  // Band: an open alert stays while the recent median keeps half the
  // sustained rise.
  v.present = recent >= (1 + rule.sustained_rise() / 2) * base;
  // Onset: the first of the trailing slow steps.
  for (auto it = recent_step_times_.rbegin(); it != recent_step_times_.rend(); ++it) {
    if (it->second < threshold) break;
    v.onset_step = it->first;
  }
  v.alert = BaseAlert(kRuleStepTimeRegression);
  // The likely cause: the one device the late-arrival test finds everyone
  // waiting for (none when no device or several are).
  int32_t cause = -1;
  for (const v1::DeviceStep* d : devices) {
    v.alert.add_ranks(d->rank());
    const LateArrivalDetector::State* late = late_arrivals_.Find(d->rank());
    if (late == nullptr || !late->alarmed) continue;
    cause = cause == -1 ? static_cast<int32_t>(d->rank()) : -2;
  }
  if (cause >= 0) v.alert.set_cause_rank(cause);
  v.alert.set_metric("step_time_ns");
  v.alert.set_observed(step_time);
  v.alert.set_baseline(step_time_baseline_ns_);
  v.alert.set_threshold(threshold);
  v.what = "the job's step time regressed";
  v.values = absl::StrFormat("%s vs baseline %s (%+.0f%%)", FormatNs(step_time),
                             FormatNs(step_time_baseline_ns_),
                             100.0 * (step_time / step_time_baseline_ns_ - 1));
  out.push_back(std::move(v));
  return out;
}

}  // namespace trainscope::collector
