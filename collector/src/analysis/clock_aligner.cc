#include "trainscope/collector/analysis/clock_aligner.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "robust_line.h"

namespace trainscope::collector {

using clock_internal::FitRobustLine;
using clock_internal::kMaxRank;
using clock_internal::LineFit;
using clock_internal::LineRules;
using clock_internal::Median;
using clock_internal::Point;
using clock_internal::RootSumSquare;
using trainscope::v1::ClockEstimate;
using trainscope::v1::ClockJump;
using trainscope::v1::ClockReport;
using trainscope::v1::ClockSource;

ClockAligner::ClockAligner(GroupDirectory* groups) : ClockAligner(groups, Options()) {}

ClockAligner::ClockAligner(GroupDirectory* groups, const Options& options)
    : groups_(groups), options_(options) {}

ClockAligner::Device& ClockAligner::Touch(uint32_t rank) {
  if (rank >= devices_.size()) devices_.resize(rank + 1);
  Device& d = devices_[rank];
  if (d.seen) return d;
  d.seen = true;
  if (!reference_fixed_ && rank < reference_) {
    Rebase(rank);
  } else {
    Refit(rank);
  }
  return devices_[rank];
}

void ClockAligner::SetReference(uint32_t rank) {
  if (rank >= kMaxRank) return;
  reference_fixed_ = true;
  Rebase(rank);
}

void ClockAligner::Rebase(uint32_t rank) {
  // Every collective and send/recv sample was taken against the old
  // reference's alignment graph: start over (probes stay valid).
  reference_ = rank;
  if (rank >= devices_.size()) devices_.resize(rank + 1);
  ResetSamples();
  AssignLeaders();  // the reference leads its domain
  for (uint32_t r = 0; r < devices_.size(); ++r) Refit(r);
}

void ClockAligner::ResetSamples() {
  for (Device& d : devices_) {
    d.level = kUnaligned;
    d.collective = CollectiveWindow();
    d.gpu_collective = CollectiveWindow();
    d.p2p.clear();
    d.internal = Line();
    d.source = v1::CLOCK_SOURCE_UNSPECIFIED;
  }
  if (reference_ < devices_.size()) devices_[reference_].level = 0;
}

void ClockAligner::SetClockDomain(uint32_t rank, const std::string& domain) {
  if (rank >= kMaxRank) return;
  Device& d = Touch(rank);
  if (d.domain == domain) return;
  const uint32_t old_leader = Leader(rank);
  if (!d.domain.empty()) {
    // Moved to another clock (restarted elsewhere): what it holds was read
    // on the old one, or mixed with its old domain's.
    d.probes.clear();
    d.probe_suspects.clear();
    d.best_rtt = -1;
    d.probe_fit = Fit();
  }
  d.domain = domain;
  if (AssignLeaders()) {
    ResetSamples();
    for (uint32_t r = 0; r < devices_.size(); ++r) Refit(r);
    return;
  }
  Refit(old_leader);
  Refit(rank);
}

bool ClockAligner::AssignLeaders() {
  // Ascending ranks: the first member is the lowest; the reference wins.
  absl::flat_hash_map<std::string, uint32_t> leaders;
  for (uint32_t r = 0; r < devices_.size(); ++r) {
    const Device& d = devices_[r];
    if (!d.seen || d.domain.empty()) continue;
    auto [it, inserted] = leaders.emplace(d.domain, r);
    if (r == reference_) it->second = r;
  }
  bool reset = false;
  for (Device& d : devices_) d.followers.clear();
  for (uint32_t r = 0; r < devices_.size(); ++r) {
    Device& d = devices_[r];
    uint32_t leader = r;
    if (d.seen && !d.domain.empty()) leader = leaders.at(d.domain);
    const uint32_t before = Leader(r);
    d.leader = leader == r ? kSelf : leader;
    if (leader != r) devices_[leader].followers.push_back(r);
    if (before == leader) continue;
    // Samples of others may name this device (or its old leader) as anchor.
    reset |= d.collective_samples > 0 || d.p2p_constraints > 0;
    if (before == r) HandProbes(r, leader);
  }
  return reset;
}

void ClockAligner::HandProbes(uint32_t from, uint32_t to) {
  Device& f = devices_[from];
  Device& t = devices_[to];
  if (!t.has_nominal && f.has_nominal) {
    t.has_nominal = true;
    t.nominal = f.nominal;
  }
  if (f.probes.empty()) return;
  // One clock: the probes are the new leader's readings as much as the old one's.
  t.probes.insert(t.probes.end(), f.probes.begin(), f.probes.end());
  std::sort(t.probes.begin(), t.probes.end(),
            [](const ProbeSample& a, const ProbeSample& b) { return a.local < b.local; });
  const size_t window = static_cast<size_t>(options_.probe_window) * (1 + t.followers.size());
  while (t.probes.size() > window) t.probes.pop_front();
  t.best_rtt = -1;
  for (const ProbeSample& p : t.probes) {
    if (t.best_rtt < 0 || p.rtt < t.best_rtt) t.best_rtt = p.rtt;
  }
  FitProbes(t);
  f.probes.clear();
  f.probe_suspects.clear();
  f.best_rtt = -1;
  f.probe_fit = Fit();
}

void ClockAligner::SyncFollower(uint32_t follower) {
  Device& f = devices_[follower];
  const Device& l = devices_[Leader(follower)];
  if (&f == &l) return;
  f.level = l.level;
  f.epoch = l.epoch;
  f.source = l.source;
  f.internal = l.internal;
  f.out = l.out;
  f.uncertainty = l.uncertainty;
  f.spread = l.spread;
  f.insufficient = l.insufficient;
  f.updated_local = l.updated_local;
}

void ClockAligner::SetNominalOffset(uint32_t rank, int64_t unix_minus_local_ns) {
  if (rank >= kMaxRank) return;
  Device& d = Touch(rank);
  d.has_nominal = true;
  d.nominal = unix_minus_local_ns;
  Device& leader = devices_[Leader(rank)];
  if (!leader.has_nominal) {
    leader.has_nominal = true;
    leader.nominal = unix_minus_local_ns;
  }
  if (Leader(rank) == reference_) {
    PublishAll();
  } else {
    Refit(rank);
  }
}

void ClockAligner::AddCommunication(uint32_t rank, const DeviceEvent& e) {
  if (rank >= kMaxRank) return;
  if (e.detail == v1::COLLECTIVE_KIND_SEND || e.detail == v1::COLLECTIVE_KIND_RECV) {
    AddP2p(rank, e, e.detail == v1::COLLECTIVE_KIND_SEND);
  } else {
    AddCollective(rank, e);
  }
}

// ---------------------------------------------------------------------------
// Estimates.

bool ClockAligner::Internal(uint32_t rank, uint32_t epoch, int64_t local, int64_t* out) const {
  if (rank >= devices_.size()) return false;
  const Device& d = devices_[Leader(rank)];
  if (d.epoch != epoch) return false;
  *out = d.internal.At(local);
  return true;
}

double ClockAligner::AnchorUncertainty(const CollectiveWindow& window) const {
  if (window.samples.empty()) return 0;
  const uint32_t anchor = window.samples.back().anchor_rank;
  return anchor == reference_ ? 0 : devices_[anchor].uncertainty;
}

LineRules ClockAligner::Rules(double prior_spread) const {
  LineRules rules;
  rules.min_span = options_.min_drift_span_ns;
  rules.min_points = options_.min_drift_samples;
  rules.max_slope = options_.max_drift_ppm * 1e-6;
  rules.max_slope_error = options_.max_drift_error_ppm * 1e-6;
  rules.outlier_sigmas = options_.outlier_sigmas;
  rules.prior_spread = prior_spread;
  rules.unfitted_slope = options_.unfitted_drift_ppm * 1e-6;
  return rules;
}

bool ClockAligner::FitCollectives(Device& d, bool gpu, Fit* fit) {
  const CollectiveWindow& window = gpu ? d.gpu_collective : d.collective;
  std::vector<Point> pts;
  pts.reserve(window.samples.size());
  for (const CollectiveSample& s : window.samples) {
    int64_t mapped = 0;
    if (Internal(s.anchor_rank, s.anchor_epoch, s.anchor_local, &mapped)) {
      pts.push_back(Point{s.local, mapped - s.local});
    }
  }
  LineFit line;
  const double scatter = gpu ? options_.gpu_collective_scatter_ns : options_.collective_scatter_ns;
  if (!FitRobustLine(pts, Rules(scatter), &line)) return false;
  fit->line = Line{line.anchor, line.offset, line.slope};
  fit->spread = line.spread;
  fit->uncertainty = line.uncertainty;
  fit->used = line.used;
  fit->ok = true;
  fit->insufficient = line.insufficient;
  d.updated_local = std::max(d.updated_local, line.newest);
  return true;
}

bool ClockAligner::ProbeCandidate(const Device& d, Line* line, double* uncertainty,
                                  bool* insufficient) const {
  if (!d.probe_fit.ok && !d.has_nominal) return false;
  // Through Unix time: unix = local + probe line, and the reference device's
  // own probe line back from Unix onto its clock.
  const Line unix_line = d.probe_fit.ok ? d.probe_fit.line : Line{0, d.nominal, 0};
  const Device* ref = reference_ < devices_.size() ? &devices_[reference_] : nullptr;
  Line ref_line;
  if (ref != nullptr && ref->probe_fit.ok) {
    ref_line = ref->probe_fit.line;
  } else if (ref != nullptr && ref->has_nominal) {
    ref_line = Line{0, ref->nominal, 0};
  }
  const double kr = ref_line.slope;
  const double offset = (static_cast<double>(unix_line.offset - ref_line.offset) -
                         kr * static_cast<double>(unix_line.anchor - ref_line.anchor)) /
                        (1 + kr);
  const bool ref_probed = ref != nullptr && ref->probe_fit.ok;
  // Relative to the reference device a drift is known only when both lines
  // state theirs.
  *insufficient = !d.probe_fit.ok || d.probe_fit.insufficient ||
                  (ref != nullptr && (!ref_probed || ref->probe_fit.insufficient));
  const double slope = *insufficient ? 0 : (unix_line.slope - kr) / (1 + kr);
  *line = Line{unix_line.anchor, std::llround(offset), slope};
  const double nominal = options_.nominal_uncertainty_ns;
  const double ref_unc = ref_probed ? ref->probe_fit.uncertainty : (ref ? nominal : 0);
  *uncertainty = RootSumSquare(d.probe_fit.ok ? d.probe_fit.uncertainty : nominal, ref_unc);
  return true;
}

void ClockAligner::Refit(uint32_t rank) {
  if (rank >= devices_.size()) return;
  rank = Leader(rank);  // a domain is fitted once, by its leader
  Device& d = devices_[rank];
  if (rank == reference_) {
    d.level = 0;
    d.internal = Line();
    d.insufficient = false;  // itself, exactly
    // Its offset onto Unix time; relative to it every other device is exact.
    d.uncertainty = d.probe_fit.ok ? d.probe_fit.uncertainty : 0;
    d.source = d.best_rtt >= 0 ? v1::CLOCK_SOURCE_PROBES : v1::CLOCK_SOURCE_UNSPECIFIED;
    Publish(rank, d);
    return;
  }
  // Every signal gives a candidate with its uncertainty; the most certain
  // wins. On an oversubscribed host, scheduling delays spread collective
  // completions by milliseconds while probes still pin the clock to tens of
  // microseconds, so collectives must not win there just by precedence.
  // GPU collectives are the device's collective signal wherever it has them
  // (see the class comment: its CPU records' ends may be launches).
  Fit fit;
  double anchor_unc = 0;
  const bool gpu = FitCollectives(d, /*gpu=*/true, &fit);
  const bool collectives = gpu || FitCollectives(d, /*gpu=*/false, &fit);
  const v1::ClockSource collective_source =
      gpu ? v1::CLOCK_SOURCE_GPU_COLLECTIVES : v1::CLOCK_SOURCE_COLLECTIVES;
  const CollectiveWindow& window = gpu ? d.gpu_collective : d.collective;
  const double collective_unc =
      collectives ? RootSumSquare(fit.uncertainty, AnchorUncertainty(window)) : 0;
  Line probe_line;
  double probe_unc = 0;
  bool probe_insufficient = true;
  // Through Unix time: the probes' line, or the nominal prior without probes.
  const bool through_unix = ProbeCandidate(d, &probe_line, &probe_unc, &probe_insufficient);
  const bool probes = through_unix && d.probe_fit.ok;
  // A device's own wall-clock reading competes too: collective ends that
  // scatter by more than NTP's millisecond (mismatched instances, launch
  // records) are no evidence of a skew.
  if (collectives && (!through_unix || collective_unc <= probe_unc)) {
    d.source = collective_source;
    ClipToP2p(d, window, &fit.line);
    d.internal = fit.line;
    d.spread = fit.spread;
    d.uncertainty = collective_unc;
    d.insufficient = fit.insufficient;
  } else if (Fit p2p; !probes && FitP2p(rank, d, &p2p, &anchor_unc)) {
    d.source = v1::CLOCK_SOURCE_POINT_TO_POINT;
    d.internal = p2p.line;
    d.spread = p2p.spread;
    d.uncertainty = RootSumSquare(p2p.uncertainty, anchor_unc);
    d.insufficient = p2p.insufficient;
  } else if (through_unix) {
    d.internal = probe_line;
    // Without probes the line is the device's own wall-clock reading.
    d.source = probes ? v1::CLOCK_SOURCE_PROBES : v1::CLOCK_SOURCE_NOMINAL;
    d.uncertainty = probe_unc;
    d.insufficient = probe_insufficient;
    if (d.probe_fit.ok && !d.probes.empty()) {
      d.updated_local = std::max(d.updated_local, d.probes.back().local);
    }
  } else {
    d.source = v1::CLOCK_SOURCE_UNSPECIFIED;
    d.internal = Line();
    d.uncertainty = 0;
    d.insufficient = true;
  }
  Publish(rank, d);
}

ClockAligner::Line ClockAligner::ReferenceLine() const {
  if (reference_ >= devices_.size()) return Line();
  const Device& ref = devices_[reference_];
  if (ref.probe_fit.ok) return ref.probe_fit.line;
  return ref.has_nominal ? Line{0, ref.nominal, 0} : Line();
}

void ClockAligner::Publish(uint32_t rank, Device& d) {
  if (Leader(rank) != rank) {
    SyncFollower(rank);
    return;
  }
  PublishLine(rank, d);
  for (uint32_t f : d.followers) SyncFollower(f);
}

void ClockAligner::PublishLine(uint32_t rank, Device& d) {
  if (d.source == v1::CLOCK_SOURCE_UNSPECIFIED && rank != reference_) {
    d.out = Line();  // no estimate: offset 0
    return;
  }
  // out = reference line after internal line, both linear.
  const Line ref = ReferenceLine();
  const Line& in = d.internal;
  d.out.anchor = in.anchor;
  d.out.offset = in.offset + ref.offset +
                 std::llround(ref.slope * static_cast<double>(in.anchor + in.offset - ref.anchor));
  d.out.slope = in.slope + ref.slope + ref.slope * in.slope;
}

void ClockAligner::PublishAll() {
  for (uint32_t r = 0; r < devices_.size(); ++r) Publish(r, devices_[r]);
}

void ClockAligner::OnDeviceClosed(uint32_t rank) {
  if (rank >= kMaxRank) return;
  Touch(rank).closed = true;
  for (auto& [key, state] : group_states_) {
    CountSilent(state);
    MaybeCloseInstances(state);
  }
}

int64_t ClockAligner::ToReference(uint32_t rank, int64_t local_ns) const {
  if (rank >= devices_.size()) return local_ns;
  return devices_[rank].out.At(local_ns);
}

ClockEstimate ClockAligner::Estimate(uint32_t rank) const {
  ClockEstimate e;
  e.set_rank(rank);
  if (rank >= devices_.size() || !devices_[rank].seen) return e;
  const Device& d = devices_[rank];
  const uint32_t leader_rank = Leader(rank);
  const Device& leader = devices_[leader_rank];
  // Stated at the newest sample, so that estimates of different devices
  // compare directly (a line anchored far back carries its drift with it).
  // A domain's devices are stated at their leader's, so they read the same.
  int64_t anchor = leader.updated_local;
  if (anchor == 0) anchor = leader.probes.empty() ? leader.out.anchor : leader.probes.back().local;
  e.set_anchor_local_ns(anchor);
  e.set_offset_ns(d.out.At(anchor) - anchor);
  e.set_drift_ppm(d.out.slope * 1e6);
  e.set_offset_to_reference_device_ns(leader.internal.At(anchor) - anchor);
  e.set_drift_to_reference_device_ppm(leader.internal.slope * 1e6);
  e.set_clock_domain(d.domain);
  e.set_domain_leader(leader_rank);
  e.set_uncertainty_ns(d.uncertainty);
  // The reference's domain reads the reference clock itself; a device
  // without any estimate (not even a nominal offset) has no evidence at all.
  e.set_insufficient_evidence(
      leader_rank != reference_ &&
      (leader.insufficient || leader.source == v1::CLOCK_SOURCE_UNSPECIFIED));
  e.set_probe_samples(d.probe_samples);
  e.set_collective_samples(d.collective_samples);
  e.set_gpu_collective_samples(d.gpu_collective_samples);
  e.set_p2p_constraints(d.p2p_constraints);
  e.set_jumps(d.jumps);
  e.set_reference(rank == reference_);
  e.set_updated_local_ns(d.updated_local);
  e.set_source(leader_rank != rank ? v1::CLOCK_SOURCE_CLOCK_DOMAIN : d.source);
  return e;
}

std::vector<ClockJump> ClockAligner::TakeJumps() { return std::exchange(new_jumps_, {}); }

ClockReport ClockAligner::Report() const {
  ClockReport report;
  for (uint32_t r = 0; r < devices_.size(); ++r) {
    if (devices_[r].seen) *report.add_devices() = Estimate(r);
  }
  return report;
}

}  // namespace trainscope::collector
