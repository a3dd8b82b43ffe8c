// ClockAligner's signals (see clock_aligner.h): collective instances,
// send/receive bounds and agent<->collector probes.
#include <algorithm>
#include <cmath>
#include <utility>

#include "robust_line.h"
#include "trainscope/collector/analysis/clock_aligner.h"

namespace trainscope::collector {

using clock_internal::FitRobustLine;
using clock_internal::kMaxRank;
using clock_internal::LineFit;
using clock_internal::Median;
using clock_internal::Point;
using clock_internal::RootSumSquare;
using trainscope::v1::ClockEstimate;
using trainscope::v1::ClockJump;
using trainscope::v1::ClockReport;
using trainscope::v1::ClockSource;

// ---------------------------------------------------------------------------
// Collectives.

void ClockAligner::AddCollective(uint32_t rank, const DeviceEvent& e) {
  Touch(rank);
  groups_->NoteUse(e.group, rank);
  const bool gpu = e.kind == v1::EVENT_KIND_GPU_COLLECTIVE;
  GroupState& state = group_states_[GroupKey(e.group, gpu)];
  state.group = e.group;
  state.gpu = gpu;
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
    CountSilent(state);
  }
  state.any = true;
  MaybeCloseInstances(state);
}

void ClockAligner::CountSilent(GroupState& state) {
  // Closed members, and members the group went on without for as many
  // sequences as an instance may wait (dead or detached ranks). Silent
  // members cannot have reported a pending instance: those are newer.
  const uint64_t bound = static_cast<uint64_t>(std::max(options_.max_pending_instances, 1));
  state.silent = 0;
  for (uint32_t m : groups_->Members(state.group)) {
    if (m < devices_.size() && devices_[m].closed) {
      ++state.silent;
      continue;
    }
    auto it = state.last_sequence.find(m);
    const uint64_t next = it == state.last_sequence.end() ? 0 : it->second;
    if (next + bound <= state.newest) ++state.silent;
  }
}

bool ClockAligner::InstanceComplete(const GroupState& state, const Instance& instance) {
  const std::vector<uint32_t>& members = groups_->Members(state.group);
  if (members.empty()) return false;
  // Learned memberships grow as ranks show up: wait for two at least.
  if (!groups_->MembershipKnown(state.group) && instance.ends.size() < 2) return false;
  return instance.ends.size() + state.silent >= members.size();
}

void ClockAligner::MaybeCloseInstances(GroupState& state) {
  const uint64_t bound = static_cast<uint64_t>(std::max(options_.max_pending_instances, 1));
  for (auto& [sequence, instance] : state.pending) {
    if (instance.done) continue;
    if (InstanceComplete(state, instance) || state.newest >= sequence + bound) {
      instance.done = true;
      FinishInstance(instance, state.gpu);
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

void ClockAligner::FinishInstance(const Instance& instance, bool gpu) {
  if (instance.ends.size() < 2) return;
  // Ends read on one clock domain are one clock's readings of nearly one
  // true time: the domain takes part as its leader with the members' median
  // end (robust against one member's late wake-up).
  std::vector<std::pair<uint32_t, int64_t>> ends;  // leader, local end
  ends.reserve(instance.ends.size());
  bool shared = false;
  for (const auto& [r, end] : instance.ends) {
    ++(gpu ? devices_[r].gpu_collective_samples : devices_[r].collective_samples);
    const uint32_t leader = Leader(r);
    shared |= leader != r;
    ends.emplace_back(leader, end);
  }
  if (shared) {
    std::sort(ends.begin(), ends.end());
    size_t out = 0;
    for (size_t i = 0; i < ends.size();) {
      size_t j = i;
      while (j < ends.size() && ends[j].first == ends[i].first) ++j;
      ends[out++] = ends[i + (j - i - 1) / 2];
      i = j;
    }
    ends.resize(out);
  }
  if (ends.size() < 2) return;  // one domain only: nothing to learn
  int min_level = kUnaligned;
  for (const auto& [r, end] : ends) min_level = std::min(min_level, devices_[r].level);
  if (min_level == kUnaligned) {
    // Nothing here is linked to the reference yet: align the group on one
    // stand-in (probed if possible) so the rest is at least mutually aligned.
    uint32_t stand_in = UINT32_MAX;
    bool probed = false;
    for (const auto& [r, end] : ends) {
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
  for (uint32_t i = 0; i < ends.size(); ++i) {
    const auto& [r, end] = ends[i];
    if (devices_[r].level != min_level) continue;
    int64_t mapped = 0;
    if (Internal(r, devices_[r].epoch, end, &mapped)) anchors.emplace_back(mapped, i);
  }
  if (anchors.empty()) return;
  std::sort(anchors.begin(), anchors.end());
  const auto& [anchor_rank, anchor_end] = ends[anchors[(anchors.size() - 1) / 2].second];
  for (const auto& [r, end] : ends) {
    Device& d = devices_[r];
    if (d.level <= min_level) continue;
    d.level = min_level + 1;
    CollectiveSample sample{end, anchor_end, anchor_rank, devices_[anchor_rank].epoch};
    CheckCollectiveJump(r, d, gpu, sample);
    Refit(r);
  }
}

void ClockAligner::CheckCollectiveJump(uint32_t rank, Device& d, bool gpu,
                                       const CollectiveSample& s) {
  CollectiveWindow& window = gpu ? d.gpu_collective : d.collective;
  auto residual = [&](const CollectiveSample& x, double* out) {
    int64_t mapped = 0;
    if (!Internal(x.anchor_rank, x.anchor_epoch, x.anchor_local, &mapped)) return false;
    *out = static_cast<double>(mapped - d.internal.At(x.local));
    return true;
  };
  double res = 0;
  // Judged against the line only when it was fitted on this kind of sample.
  const v1::ClockSource source =
      gpu ? v1::CLOCK_SOURCE_GPU_COLLECTIVES : v1::CLOCK_SOURCE_COLLECTIVES;
  const bool fitted = d.source == source && window.samples.size() >= 4;
  if (fitted && residual(s, &res)) {
    const double threshold =
        std::max(static_cast<double>(options_.jump_min_ns), options_.jump_sigmas * d.spread);
    if (std::fabs(res) > threshold) {
      window.suspects.push_back(s);
      if (static_cast<int>(window.suspects.size()) < options_.jump_confirm) return;
      std::vector<double> shifts;
      for (const CollectiveSample& x : window.suspects) {
        double r = 0;
        if (residual(x, &r)) shifts.push_back(r);
      }
      const double shift = Median(shifts);
      bool agree = shifts.size() == window.suspects.size();
      for (double r : shifts) agree &= std::fabs(r - shift) <= threshold / 2;
      if (!agree) {
        window.suspects.erase(window.suspects.begin());
        return;
      }
      // Residual = reference - local moved by -step of the local clock.
      RecordJump(rank, window.suspects.front().local, -std::llround(shift),
                 gpu ? "gpu collectives" : "collectives");
      // The other kind's samples were read on the clock before the jump.
      CollectiveWindow& other = gpu ? d.collective : d.gpu_collective;
      other = CollectiveWindow();
      window.samples.assign(window.suspects.begin(), window.suspects.end());
      window.suspects.clear();
      return;
    }
  }
  window.suspects.clear();
  window.samples.push_back(s);
  const int limit = gpu ? options_.gpu_collective_window : options_.collective_window;
  while (static_cast<int>(window.samples.size()) > limit) window.samples.pop_front();
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
  const ChannelKey key{e.group, send ? rank : peer, send ? peer : rank,
                       e.kind == v1::EVENT_KIND_GPU_COLLECTIVE};
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
  ++devices_[sender].p2p_constraints;
  ++devices_[receiver].p2p_constraints;
  // One clock domain: the pair says nothing about its one clock.
  sender = Leader(sender);
  receiver = Leader(receiver);
  if (sender == receiver) return;
  // reference(recv_end) >= reference(send_start): a lower bound on the
  // receiver's offset, an upper bound on the sender's.
  AddBound(receiver, P2pBound{recv_end, send_start, sender, devices_[sender].epoch, true});
  AddBound(sender, P2pBound{send_start, recv_end, receiver, devices_[receiver].epoch, false});
}

void ClockAligner::AddBound(uint32_t rank, const P2pBound& bound) {
  Device& d = devices_[rank];
  d.p2p.push_back(bound);
  while (static_cast<int>(d.p2p.size()) > options_.p2p_window) d.p2p.pop_front();
  if (rank == reference_) return;
  // Devices aligned by collectives are clipped at their next instance; the
  // others refit a few times per bucket (a fit scans the whole window).
  if (ByCollectives(d.source)) return;
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
    // The buckets' half widths bound each mid point: no scatter to assume.
    FitRobustLine(mids, Rules(/*prior_spread=*/0), &line);
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
      fit->insufficient = line.insufficient;
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

void ClockAligner::ClipToP2p(const Device& d, const CollectiveWindow& window, Line* line) const {
  if (d.p2p.empty() || window.samples.empty()) return;
  // Only bounds inside the span the line was fitted on: no extrapolation.
  const int64_t first = window.samples.front().local;
  const int64_t last = window.samples.back().local;
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
  ++Touch(rank).probe_samples;
  // A domain's probes all read its one clock: they feed its leader's fit.
  rank = Leader(rank);
  Device& d = devices_[rank];
  ProbeSample s;
  s.local = agent_receive_ns + (agent_send_ns - agent_receive_ns) / 2;
  s.unix_offset =
      ((collector_send_unix_ns - agent_receive_ns) + (collector_receive_unix_ns - agent_send_ns)) /
      2;
  s.rtt = rtt;
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
  const size_t window = static_cast<size_t>(options_.probe_window) * (1 + d.followers.size());
  while (d.probes.size() > window) d.probes.pop_front();
  const bool better = d.best_rtt < 0 || s.rtt <= d.best_rtt;
  if (better) {
    d.best_rtt = s.rtt;
  }
  FitProbes(d);
  if (rank == reference_) {
    // Every device is re-based when the reference's offset or line moves.
    for (uint32_t r = 0; r < devices_.size(); ++r) {
      if (devices_[r].source == v1::CLOCK_SOURCE_PROBES && r != reference_ && Leader(r) == r) {
        Refit(r);
      }
    }
    Refit(rank);
    PublishAll();
  } else if (!ByCollectives(d.source) && d.source != v1::CLOCK_SOURCE_POINT_TO_POINT) {
    Refit(rank);
  }
}

void ClockAligner::FitProbes(Device& d) {
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
  // The round trip bounds each probe: no scatter to assume.
  if (!FitRobustLine(pts, Rules(/*prior_spread=*/0), &line)) return;
  d.probe_fit.line = Line{line.anchor, line.offset, line.slope};
  d.probe_fit.spread = line.spread;
  d.probe_fit.uncertainty = RootSumSquare(line.uncertainty, static_cast<double>(min_rtt) / 2);
  d.probe_fit.used = line.used;
  d.probe_fit.ok = true;
  d.probe_fit.insufficient = line.insufficient;
}

}  // namespace trainscope::collector
