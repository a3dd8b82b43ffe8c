#include "trainscope/collector/analysis/clock_aligner.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace trainscope::collector {
namespace {

using trainscope::v1::ClockEstimate;
using trainscope::v1::ClockJump;
using trainscope::v1::ClockReport;
using trainscope::v1::ClockSource;

// Ranks above this are taken for garbage, not devices.
constexpr uint32_t kMaxRank = 1u << 20;

// y(x) = offset + slope * (x - anchor), y being "other clock minus local".
struct Point {
  int64_t x;
  int64_t y;
};
struct LineFit {
  int64_t anchor = 0;
  int64_t offset = 0;
  double slope = 0;
  double spread = 0;       // residual standard deviation
  double uncertainty = 0;  // standard error of the line at the newest x
  int used = 0;
  int64_t newest = 0;
};

double Median(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  return v[mid];
}

// Keeps the points within `sigmas` robust deviations (MAD) of the residuals'
// median; false when every point stays.
bool Trim(const std::vector<double>& residuals, double sigmas, std::vector<char>* keep,
          size_t* kept) {
  std::vector<double> v;
  v.reserve(residuals.size());
  for (size_t i = 0; i < residuals.size(); ++i) {
    if ((*keep)[i]) v.push_back(residuals[i]);
  }
  const double centre = Median(v);
  for (double& r : v) r = std::fabs(r - centre);
  // 1 us floor: exact synthetic data must not trim on rounding.
  const double cutoff = std::max(sigmas * 1.4826 * Median(v), 1'000.0);
  size_t count = 0;
  for (size_t i = 0; i < residuals.size(); ++i) {
    (*keep)[i] = std::fabs(residuals[i] - centre) <= cutoff;
    count += (*keep)[i];
  }
  const bool changed = count != *kept;
  *kept = count;
  return changed;
}

// Least-squares line over the points that survive trimming against a robust
// first line and then against the fitted line itself: one late completion
// at either end of the window has too much leverage for a plain fit.
// Drift needs a span of at least `min_span`; below it the line keeps
// `fallback_slope`.
bool FitRobustLine(const std::vector<Point>& pts, double fallback_slope, int64_t min_span,
                   double max_slope, double outlier_sigmas, LineFit* out) {
  const size_t n = pts.size();
  if (n == 0) return false;
  const int64_t x_base = pts[0].x;
  const int64_t y_base = pts[0].y;
  std::vector<char> keep(n, 1);
  std::vector<double> residuals(n);
  size_t kept = n;
  constexpr size_t kMinTrim = 4;
  if (n >= kMinTrim) {
    // A first line robust to late completions anywhere in the window: the
    // median slope over all pairs (Theil-Sen) while the window is short and
    // outliers weigh most, over pairs half a window apart after that.
    std::vector<double> slopes;
    constexpr size_t kAllPairsUpTo = 32;
    auto add = [&](size_t i, size_t j) {
      const int64_t dx = pts[j].x - pts[i].x;
      if (dx != 0) slopes.push_back(static_cast<double>(pts[j].y - pts[i].y) / dx);
    };
    if (n <= kAllPairsUpTo) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = i + 1; j < n; ++j) add(i, j);
      }
    } else {
      for (size_t i = 0; i + n / 2 < n; ++i) add(i, i + n / 2);
    }
    const double slope0 =
        slopes.empty() ? fallback_slope : std::clamp(Median(slopes), -max_slope, max_slope);
    for (size_t i = 0; i < n; ++i) {
      residuals[i] =
          static_cast<double>(pts[i].y - y_base) - slope0 * static_cast<double>(pts[i].x - x_base);
    }
    Trim(residuals, outlier_sigmas, &keep, &kept);
  }
  double mx = 0, my = 0, sxx = 0, slope = fallback_slope, intercept = 0;
  bool slope_fitted = false;
  for (int pass = 0; pass < 2; ++pass) {
    mx = my = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      mx += static_cast<double>(pts[i].x - x_base);
      my += static_cast<double>(pts[i].y - y_base);
      lo = std::min(lo, pts[i].x);
      hi = std::max(hi, pts[i].x);
    }
    mx /= static_cast<double>(kept);
    my /= static_cast<double>(kept);
    sxx = 0;
    double sxy = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      const double dx = static_cast<double>(pts[i].x - x_base) - mx;
      const double dy = static_cast<double>(pts[i].y - y_base) - my;
      sxx += dx * dx;
      sxy += dx * dy;
    }
    slope_fitted = kept >= 3 && hi - lo >= min_span && sxx > 0;
    slope = slope_fitted ? std::clamp(sxy / sxx, -max_slope, max_slope) : fallback_slope;
    intercept = my - slope * mx;
    for (size_t i = 0; i < n; ++i) {
      residuals[i] = static_cast<double>(pts[i].y - y_base) -
                     (intercept + slope * static_cast<double>(pts[i].x - x_base));
    }
    if (pass == 1 || n < kMinTrim) break;
    if (!Trim(residuals, outlier_sigmas, &keep, &kept)) break;
  }
  const int params = slope_fitted ? 2 : 1;
  double ss = 0;
  int64_t newest = INT64_MIN;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    ss += residuals[i] * residuals[i];
    newest = std::max(newest, pts[i].x);
  }
  const double dof = static_cast<double>(kept) - params;
  out->spread = dof > 0 ? std::sqrt(ss / dof) : 0;
  const double k = static_cast<double>(kept);
  if (slope_fitted) {
    const double dxn = static_cast<double>(newest - x_base) - mx;
    out->uncertainty = out->spread * std::sqrt(1 / k + dxn * dxn / sxx);
  } else {
    out->uncertainty = out->spread / std::sqrt(k);
  }
  out->anchor = x_base + std::llround(mx);
  out->offset = y_base + std::llround(my);  // the line passes through the means
  out->slope = slope;
  out->used = static_cast<int>(kept);
  out->newest = newest;
  return true;
}

double RootSumSquare(double a, double b) { return std::sqrt(a * a + b * b); }

}  // namespace

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
  for (Device& d : devices_) {
    d.level = kUnaligned;
    d.collective.clear();
    d.p2p.clear();
    d.collective_suspects.clear();
    d.internal = Line();
    d.source = v1::CLOCK_SOURCE_UNSPECIFIED;
  }
  devices_[rank].level = 0;
  for (uint32_t r = 0; r < devices_.size(); ++r) Refit(r);
}

void ClockAligner::SetNominalOffset(uint32_t rank, int64_t unix_minus_local_ns) {
  if (rank >= kMaxRank) return;
  Device& d = Touch(rank);
  d.has_nominal = true;
  d.nominal = unix_minus_local_ns;
  if (rank == reference_) {
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
// Collectives.

void ClockAligner::AddCollective(uint32_t rank, const DeviceEvent& e) {
  Touch(rank);
  groups_->NoteUse(e.group, rank);
  GroupState& state = group_states_[e.group];
  if (state.any && e.group_sequence < state.low_water) {
    ++late_events_;
    return;
  }
  Instance& instance = state.pending[e.group_sequence];
  if (instance.done) {
    ++late_events_;
    return;
  }
  // Replayed events: checked in small groups only (O(group) per event).
  if (instance.ends.size() <= 32) {
    for (const auto& [r, end] : instance.ends) {
      if (r == rank) return;
    }
  }
  instance.ends.emplace_back(rank, e.end_ns);
  uint64_t& last = state.last_sequence[rank];
  last = std::max(last, e.group_sequence + 1);
  if (!state.any || e.group_sequence > state.newest) {
    state.newest = e.group_sequence;
    CountSilent(e.group, state);
  }
  state.any = true;
  MaybeCloseInstances(e.group, state);
}

void ClockAligner::CountSilent(uint32_t group, GroupState& state) {
  // Closed members, and members the group went on without for as many
  // sequences as an instance may wait (dead or detached ranks). Silent
  // members cannot have reported a pending instance: those are newer.
  const uint64_t bound = static_cast<uint64_t>(std::max(options_.max_pending_instances, 1));
  state.silent = 0;
  for (uint32_t m : groups_->Members(group)) {
    if (m < devices_.size() && devices_[m].closed) {
      ++state.silent;
      continue;
    }
    auto it = state.last_sequence.find(m);
    const uint64_t next = it == state.last_sequence.end() ? 0 : it->second;
    if (next + bound <= state.newest) ++state.silent;
  }
}

bool ClockAligner::InstanceComplete(uint32_t group, const GroupState& state,
                                    const Instance& instance) {
  const std::vector<uint32_t>& members = groups_->Members(group);
  if (members.empty()) return false;
  // Learned memberships grow as ranks show up: wait for two at least.
  if (!groups_->MembershipKnown(group) && instance.ends.size() < 2) return false;
  return instance.ends.size() + state.silent >= members.size();
}

void ClockAligner::MaybeCloseInstances(uint32_t group, GroupState& state) {
  const uint64_t bound = static_cast<uint64_t>(std::max(options_.max_pending_instances, 1));
  for (auto& [sequence, instance] : state.pending) {
    if (instance.done) continue;
    if (InstanceComplete(group, state, instance) || state.newest >= sequence + bound) {
      instance.done = true;
      FinishInstance(instance);
      instance.ends.clear();
      instance.ends.shrink_to_fit();
    }
  }
  // Closed instances at the front become the low-water mark.
  while (!state.pending.empty() && state.pending.begin()->second.done) {
    state.low_water = state.pending.begin()->first + 1;
    state.pending.erase(state.pending.begin());
  }
}

void ClockAligner::FinishInstance(const Instance& instance) {
  if (instance.ends.size() < 2) return;
  int min_level = kUnaligned;
  for (const auto& [r, end] : instance.ends) min_level = std::min(min_level, devices_[r].level);
  if (min_level == kUnaligned) {
    // Nothing here is linked to the reference yet: align the group on one
    // stand-in (probed if possible) so the rest is at least mutually aligned.
    uint32_t stand_in = UINT32_MAX;
    bool probed = false;
    for (const auto& [r, end] : instance.ends) {
      const bool has = devices_[r].best_rtt >= 0 || devices_[r].has_nominal;
      if ((has && !probed) || (has == probed && r < stand_in)) {
        stand_in = r;
        probed = has;
      }
    }
    devices_[stand_in].level = kProbeAnchorLevel;
    min_level = kProbeAnchorLevel;
  }
  // The anchors' median end: robust against one anchor's late wake-up.
  std::vector<std::pair<int64_t, uint32_t>> anchors;  // mapped end, index
  for (uint32_t i = 0; i < instance.ends.size(); ++i) {
    const auto& [r, end] = instance.ends[i];
    if (devices_[r].level != min_level) continue;
    int64_t mapped = 0;
    if (Internal(r, devices_[r].epoch, end, &mapped)) anchors.emplace_back(mapped, i);
  }
  if (anchors.empty()) return;
  std::sort(anchors.begin(), anchors.end());
  const auto& [anchor_rank, anchor_end] = instance.ends[anchors[(anchors.size() - 1) / 2].second];
  for (const auto& [r, end] : instance.ends) {
    Device& d = devices_[r];
    ++d.collective_samples;
    if (d.level <= min_level) continue;
    d.level = min_level + 1;
    CollectiveSample sample{end, anchor_end, anchor_rank, devices_[anchor_rank].epoch};
    CheckCollectiveJump(r, d, sample);
    Refit(r);
  }
}

void ClockAligner::CheckCollectiveJump(uint32_t rank, Device& d, const CollectiveSample& s) {
  auto residual = [&](const CollectiveSample& x, double* out) {
    int64_t mapped = 0;
    if (!Internal(x.anchor_rank, x.anchor_epoch, x.anchor_local, &mapped)) return false;
    *out = static_cast<double>(mapped - d.internal.At(x.local));
    return true;
  };
  double res = 0;
  const bool fitted = d.source == v1::CLOCK_SOURCE_COLLECTIVES && d.collective.size() >= 4;
  if (fitted && residual(s, &res)) {
    const double threshold =
        std::max(static_cast<double>(options_.jump_min_ns), options_.jump_sigmas * d.spread);
    if (std::fabs(res) > threshold) {
      d.collective_suspects.push_back(s);
      if (static_cast<int>(d.collective_suspects.size()) < options_.jump_confirm) return;
      std::vector<double> shifts;
      for (const CollectiveSample& x : d.collective_suspects) {
        double r = 0;
        if (residual(x, &r)) shifts.push_back(r);
      }
      std::vector<double> sorted = shifts;
      const double shift = Median(sorted);
      bool agree = shifts.size() == d.collective_suspects.size();
      for (double r : shifts) agree &= std::fabs(r - shift) <= threshold / 2;
      if (!agree) {
        d.collective_suspects.erase(d.collective_suspects.begin());
        return;
      }
      // Residual = reference - local moved by -step of the local clock.
      RecordJump(rank, d.collective_suspects.front().local, -std::llround(shift), "collectives");
      d.collective.assign(d.collective_suspects.begin(), d.collective_suspects.end());
      d.collective_suspects.clear();
      return;
    }
  }
  d.collective_suspects.clear();
  d.collective.push_back(s);
  while (static_cast<int>(d.collective.size()) > options_.collective_window) {
    d.collective.pop_front();
  }
}

void ClockAligner::RecordJump(uint32_t rank, int64_t local, int64_t size, const char* by) {
  Device& d = devices_[rank];
  ++d.jumps;
  ++d.epoch;  // samples of others taken against this clock are stale now
  d.p2p.clear();
  d.probes.clear();
  d.probe_suspects.clear();
  d.best_rtt = -1;
  d.probe_fit = Fit();
  ClockJump jump;
  jump.set_rank(rank);
  jump.set_local_ns(local);
  jump.set_jump_ns(size);
  jump.set_detected_by(by);
  new_jumps_.push_back(std::move(jump));
}

// ---------------------------------------------------------------------------
// Point to point.

void ClockAligner::AddP2p(uint32_t rank, const DeviceEvent& e, bool send) {
  if (e.peer < 0 || static_cast<uint32_t>(e.peer) == rank ||
      static_cast<uint32_t>(e.peer) >= kMaxRank) {
    return;
  }
  Touch(rank);
  const uint32_t peer = static_cast<uint32_t>(e.peer);
  const ChannelKey key{e.group, send ? rank : peer, send ? peer : rank};
  P2pChannel& channel = channels_[key];
  std::deque<P2pHalf>& others = send ? channel.recvs : channel.sends;
  std::deque<P2pHalf>& mine = send ? channel.sends : channel.recvs;
  const P2pHalf half{e.group_sequence, send ? e.start_ns : e.end_ns};
  // Each side arrives in its own order: halves older than ours lost their match.
  while (!others.empty() && others.front().sequence < half.sequence) others.pop_front();
  if (!others.empty()) {
    if (others.front().sequence == half.sequence) {
      const P2pHalf other = others.front();
      others.pop_front();
      if (send) {
        OnP2pMatch(rank, half.time, peer, other.time);
      } else {
        OnP2pMatch(peer, other.time, rank, half.time);
      }
    } else {
      ++late_events_;  // the other side already went past it
    }
    return;
  }
  mine.push_back(half);
  while (static_cast<int>(mine.size()) > options_.max_pending_p2p) mine.pop_front();
}

void ClockAligner::OnP2pMatch(uint32_t sender, int64_t send_start, uint32_t receiver,
                              int64_t recv_end) {
  Touch(sender);
  Touch(receiver);
  // reference(recv_end) >= reference(send_start): a lower bound on the
  // receiver's offset, an upper bound on the sender's.
  AddBound(receiver, P2pBound{recv_end, send_start, sender, devices_[sender].epoch, true});
  AddBound(sender, P2pBound{send_start, recv_end, receiver, devices_[receiver].epoch, false});
}

void ClockAligner::AddBound(uint32_t rank, const P2pBound& bound) {
  Device& d = devices_[rank];
  d.p2p.push_back(bound);
  ++d.p2p_constraints;
  while (static_cast<int>(d.p2p.size()) > options_.p2p_window) d.p2p.pop_front();
  if (rank == reference_) return;
  // Devices aligned by collectives are clipped at their next instance; the
  // others refit a few times per bucket (a fit scans the whole window).
  if (d.source == v1::CLOCK_SOURCE_COLLECTIVES) return;
  if (d.source == v1::CLOCK_SOURCE_POINT_TO_POINT &&
      bound.local - d.p2p_refit_local < options_.p2p_bucket_ns / 4 &&
      bound.local >= d.p2p_refit_local) {
    return;
  }
  d.p2p_refit_local = bound.local;
  Refit(rank);
}

bool ClockAligner::FitP2p(uint32_t rank, Device& d, Fit* fit, double* anchor_unc) {
  struct Bucket {
    double lower = -INFINITY, upper = INFINITY;
    int64_t lower_x = 0, upper_x = 0;
    int peer_level = kUnaligned;
    double peer_unc = 0;
  };
  const int64_t bucket_ns = std::max<int64_t>(options_.p2p_bucket_ns, 1);
  double slope = d.internal.slope;
  const int64_t x_ref = d.p2p.empty() ? 0 : d.p2p.front().local;
  std::vector<Point> mids;
  std::vector<double> halves;
  int best_level = kUnaligned;
  double peer_unc = 0;
  for (int pass = 0; pass < 2; ++pass) {
    absl::flat_hash_map<int64_t, Bucket> buckets;
    for (const P2pBound& b : d.p2p) {
      const Device& peer = devices_[b.peer];
      // Only peers closer to the reference: no circular support.
      if (peer.level >= d.level && d.level != kUnaligned) continue;
      if (peer.level == kUnaligned) continue;
      int64_t mapped = 0;
      if (!Internal(b.peer, b.peer_epoch, b.peer_local, &mapped)) continue;
      const double value =
          static_cast<double>(mapped - b.local) - slope * static_cast<double>(b.local - x_ref);
      Bucket& bucket = buckets[b.local / bucket_ns];
      if (b.lower && value > bucket.lower) {
        bucket.lower = value;
        bucket.lower_x = b.local;
      } else if (!b.lower && value < bucket.upper) {
        bucket.upper = value;
        bucket.upper_x = b.local;
      }
      if (peer.level < bucket.peer_level) {
        bucket.peer_level = peer.level;
        bucket.peer_unc = peer.uncertainty;
      }
    }
    mids.clear();
    halves.clear();
    for (const auto& [index, bucket] : buckets) {
      if (!std::isfinite(bucket.lower) || !std::isfinite(bucket.upper)) continue;
      const int64_t x = bucket.lower_x + (bucket.upper_x - bucket.lower_x) / 2;
      const double mid = (bucket.lower + bucket.upper) / 2 + slope * static_cast<double>(x - x_ref);
      mids.push_back(Point{x, std::llround(mid)});
      halves.push_back(std::fabs(bucket.upper - bucket.lower) / 2);
      best_level = std::min(best_level, bucket.peer_level);
      peer_unc = std::max(peer_unc, bucket.peer_unc);
    }
    if (mids.empty()) break;
    std::sort(mids.begin(), mids.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    LineFit line;
    FitRobustLine(mids, d.internal.slope, options_.min_drift_span_ns, options_.max_drift_ppm * 1e-6,
                  options_.outlier_sigmas, &line);
    slope = line.slope;  // second pass: buckets compared after this drift
    if (pass == 1) {
      fit->line = Line{line.anchor, line.offset, line.slope};
      fit->spread = line.spread;
      std::vector<double> h = halves;
      // The true offset lies within the tightest bucket's half width.
      const double tightest = *std::min_element(h.begin(), h.end());
      fit->uncertainty = std::max(line.uncertainty, tightest);
      fit->used = line.used;
      fit->ok = true;
      d.updated_local = std::max(d.updated_local, line.newest);
    }
  }
  if (fit->ok) {
    d.level = std::min(d.level, best_level + 1);
    *anchor_unc = peer_unc;
    return true;
  }
  return false;
}

void ClockAligner::ClipToP2p(uint32_t rank, Device& d, Line* line) {
  if (d.p2p.empty() || d.collective.empty()) return;
  // Only bounds inside the span the line was fitted on: no extrapolation.
  const int64_t first = d.collective.front().local;
  const int64_t last = d.collective.back().local;
  double lowest_shift = -INFINITY, highest_shift = INFINITY;
  for (const P2pBound& b : d.p2p) {
    if (b.local < first || b.local > last) continue;
    if (devices_[b.peer].level >= d.level) continue;
    int64_t mapped = 0;
    if (!Internal(b.peer, b.peer_epoch, b.peer_local, &mapped)) continue;
    const double slack = static_cast<double>(mapped - line->At(b.local));
    if (b.lower) {
      lowest_shift = std::max(lowest_shift, slack);
    } else {
      highest_shift = std::min(highest_shift, slack);
    }
  }
  if (lowest_shift > highest_shift) return;  // inconsistent bounds: trust the collectives
  if (lowest_shift > 0) line->offset += std::llround(lowest_shift);
  if (highest_shift < 0) line->offset += std::llround(highest_shift);
}

// ---------------------------------------------------------------------------
// Probes.

void ClockAligner::AddProbe(uint32_t rank, int64_t collector_send_unix_ns, int64_t agent_receive_ns,
                            int64_t agent_send_ns, int64_t collector_receive_unix_ns) {
  if (rank >= kMaxRank) return;
  const int64_t rtt =
      (collector_receive_unix_ns - collector_send_unix_ns) - (agent_send_ns - agent_receive_ns);
  if (rtt < 0 || agent_send_ns < agent_receive_ns) return;
  Device& d = Touch(rank);
  ProbeSample s;
  s.local = agent_receive_ns + (agent_send_ns - agent_receive_ns) / 2;
  s.unix_offset =
      ((collector_send_unix_ns - agent_receive_ns) + (collector_receive_unix_ns - agent_send_ns)) /
      2;
  s.rtt = rtt;
  ++d.probe_samples;
  if (d.probe_fit.ok && d.probes.size() >= 8 && s.rtt <= 2 * d.best_rtt + 20'000) {
    const double res =
        static_cast<double>(s.unix_offset - (d.probe_fit.line.At(s.local) - s.local));
    const double threshold = std::max(static_cast<double>(options_.jump_min_ns),
                                      4.0 * static_cast<double>(s.rtt) + 8 * d.probe_fit.spread);
    if (std::fabs(res) > threshold) {
      d.probe_suspects.push_back(s);
      if (static_cast<int>(d.probe_suspects.size()) < options_.jump_confirm) return;
      std::vector<ProbeSample> suspects = std::move(d.probe_suspects);
      const bool owns_estimate = d.source == v1::CLOCK_SOURCE_PROBES || rank == reference_;
      const int64_t local = suspects.front().local;
      if (owns_estimate) {
        RecordJump(rank, local, -std::llround(res), "probes");
      } else {
        // The collective or send/recv residuals report the jump themselves.
        d.probes.clear();
        d.best_rtt = -1;
      }
      d.probe_suspects.clear();
      for (const ProbeSample& p : suspects) {
        d.probes.push_back(p);
        if (d.best_rtt < 0 || p.rtt <= d.best_rtt) {
          d.best_rtt = p.rtt;
        }
      }
      FitProbes(d);
      if (rank == reference_) {
        PublishAll();
      } else {
        Refit(rank);
      }
      return;
    }
  }
  d.probe_suspects.clear();
  d.probes.push_back(s);
  while (static_cast<int>(d.probes.size()) > options_.probe_window) d.probes.pop_front();
  const bool better = d.best_rtt < 0 || s.rtt <= d.best_rtt;
  if (better) {
    d.best_rtt = s.rtt;
  }
  FitProbes(d);
  if (rank == reference_) {
    // Every device is re-based when the reference's offset or line moves.
    for (uint32_t r = 0; r < devices_.size(); ++r) {
      if (devices_[r].source == v1::CLOCK_SOURCE_PROBES && r != reference_) Refit(r);
    }
    Refit(rank);
    PublishAll();
  } else if (d.source != v1::CLOCK_SOURCE_COLLECTIVES &&
             d.source != v1::CLOCK_SOURCE_POINT_TO_POINT) {
    Refit(rank);
  }
}

void ClockAligner::FitProbes(Device& d) {
  const double previous_slope = d.probe_fit.line.slope;
  d.probe_fit = Fit();
  if (d.probes.empty()) return;
  // Keep the lowest round trips: queueing only ever adds delay.
  int64_t min_rtt = INT64_MAX;
  for (const ProbeSample& p : d.probes) min_rtt = std::min(min_rtt, p.rtt);
  const int64_t cutoff = 2 * min_rtt + 20'000;
  std::vector<Point> pts;
  for (const ProbeSample& p : d.probes) {
    if (p.rtt <= cutoff) pts.push_back(Point{p.local, p.unix_offset});
  }
  LineFit line;
  if (!FitRobustLine(pts, previous_slope, options_.min_drift_span_ns, options_.max_drift_ppm * 1e-6,
                     options_.outlier_sigmas, &line)) {
    return;
  }
  d.probe_fit.line = Line{line.anchor, line.offset, line.slope};
  d.probe_fit.spread = line.spread;
  d.probe_fit.uncertainty = RootSumSquare(line.uncertainty, static_cast<double>(min_rtt) / 2);
  d.probe_fit.used = line.used;
  d.probe_fit.ok = true;
}

// ---------------------------------------------------------------------------
// Estimates.

bool ClockAligner::Internal(uint32_t rank, uint32_t epoch, int64_t local, int64_t* out) const {
  if (rank >= devices_.size() || devices_[rank].epoch != epoch) return false;
  *out = devices_[rank].internal.At(local);
  return true;
}

double ClockAligner::AnchorUncertainty(uint32_t rank) const {
  const Device& d = devices_[rank];
  if (d.collective.empty()) return 0;
  const uint32_t anchor = d.collective.back().anchor_rank;
  return anchor == reference_ ? 0 : devices_[anchor].uncertainty;
}

bool ClockAligner::FitCollectives(uint32_t rank, Device& d, Fit* fit) {
  std::vector<Point> pts;
  pts.reserve(d.collective.size());
  for (const CollectiveSample& s : d.collective) {
    int64_t mapped = 0;
    if (Internal(s.anchor_rank, s.anchor_epoch, s.anchor_local, &mapped)) {
      pts.push_back(Point{s.local, mapped - s.local});
    }
  }
  LineFit line;
  if (!FitRobustLine(pts, d.internal.slope, options_.min_drift_span_ns,
                     options_.max_drift_ppm * 1e-6, options_.outlier_sigmas, &line)) {
    return false;
  }
  fit->line = Line{line.anchor, line.offset, line.slope};
  fit->spread = line.spread;
  fit->uncertainty = line.uncertainty;
  fit->used = line.used;
  fit->ok = true;
  d.updated_local = std::max(d.updated_local, line.newest);
  return true;
}

bool ClockAligner::ProbeCandidate(const Device& d, Line* line, double* uncertainty) const {
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
  *line = Line{unix_line.anchor, std::llround(offset), (unix_line.slope - kr) / (1 + kr)};
  const double ref_unc =
      ref != nullptr && ref->probe_fit.ok ? ref->probe_fit.uncertainty : (ref ? 1e6 : 0);
  *uncertainty = RootSumSquare(d.probe_fit.ok ? d.probe_fit.uncertainty : 1e6, ref_unc);
  return true;
}

void ClockAligner::Refit(uint32_t rank) {
  if (rank >= devices_.size()) return;
  Device& d = devices_[rank];
  if (rank == reference_) {
    d.level = 0;
    d.internal = Line();
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
  Fit fit;
  double anchor_unc = 0;
  const bool collectives = FitCollectives(rank, d, &fit);
  const double collective_unc =
      collectives ? RootSumSquare(fit.uncertainty, AnchorUncertainty(rank)) : 0;
  Line probe_line;
  double probe_unc = 0;
  // Through Unix time: the probes' line, or the nominal prior without probes.
  const bool through_unix = ProbeCandidate(d, &probe_line, &probe_unc);
  const bool probes = through_unix && d.probe_fit.ok;
  if (collectives && (!probes || collective_unc <= probe_unc)) {
    d.source = v1::CLOCK_SOURCE_COLLECTIVES;
    ClipToP2p(rank, d, &fit.line);
    d.internal = fit.line;
    d.spread = fit.spread;
    d.uncertainty = collective_unc;
  } else if (!probes && FitP2p(rank, d, &fit, &anchor_unc)) {
    d.source = v1::CLOCK_SOURCE_POINT_TO_POINT;
    d.internal = fit.line;
    d.spread = fit.spread;
    d.uncertainty = RootSumSquare(fit.uncertainty, anchor_unc);
  } else if (through_unix) {
    d.internal = probe_line;
    d.source = v1::CLOCK_SOURCE_PROBES;
    d.uncertainty = probe_unc;
    if (d.probe_fit.ok && !d.probes.empty()) {
      d.updated_local = std::max(d.updated_local, d.probes.back().local);
    }
  } else {
    d.source = v1::CLOCK_SOURCE_UNSPECIFIED;
    d.internal = Line();
    d.uncertainty = 0;
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
  for (auto& [group, state] : group_states_) {
    CountSilent(group, state);
    MaybeCloseInstances(group, state);
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
  // Stated at the newest sample, so that estimates of different devices
  // compare directly (a line anchored far back carries its drift with it).
  int64_t anchor = d.updated_local;
  if (anchor == 0) anchor = d.probes.empty() ? d.out.anchor : d.probes.back().local;
  e.set_anchor_local_ns(anchor);
  e.set_offset_ns(d.out.At(anchor) - anchor);
  e.set_drift_ppm(d.out.slope * 1e6);
  e.set_uncertainty_ns(d.uncertainty);
  e.set_probe_samples(d.probe_samples);
  e.set_collective_samples(d.collective_samples);
  e.set_p2p_constraints(d.p2p_constraints);
  e.set_jumps(d.jumps);
  e.set_reference(rank == reference_);
  e.set_updated_local_ns(d.updated_local);
  e.set_source(d.source);
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
