// Online clock alignment of a job's devices: per device an offset and a
// drift (ppm) onto the job's reference clock, estimated continuously from
// collective completions, send/receive causality and agent<->collector
// probes (DESIGN.md, "Clock alignment").
//
// The reference clock is the reference device's monotonic clock mapped onto
// Unix time through that device's own probes (a line through its lowest
// round trips). The
// reference device is the one set with SetReference(), else the lowest rank
// seen (a lower rank showing up later restarts the alignment on it).
//
// Signals, in order of precedence per device:
//   1. collectives: every participant of one instance (group, sequence)
//      completes at nearly the same true time. End times, never start times,
//      so that a straggler's late arrival is not read as clock skew. Each
//      finished instance gives every participant one sample against the
//      median end of the instance's best-aligned participants (those closest
//      to the reference in the alignment graph), so alignment propagates
//      through groups that do not contain the reference device.
//      GPU collectives (NCCL/RCCL kernels, EVENT_KIND_GPU_COLLECTIVE) are
//      instances of their own and the primary signal wherever a device has
//      them: one collective's kernels end within microseconds of each other
//      on every rank, while its CPU record (an asynchronous launch, e.g.
//      Kineto's record_param_comms) may end milliseconds before the
//      collective does. CPU collectives align the devices without them.
//   2. point to point: a receive cannot end before its matching send starts.
//      Sends both ways between two devices bound the offset from both sides
//      (NTP-like; the tightest bounds win); devices with collective estimates
//      are clipped into these bounds.
//   3. probes: NTP-style round trips to the collector, lowest round trips
//      kept; the fallback for devices without either of the above.
// Offset and drift are a robust (trimmed) least-squares line over a sliding
// window of samples. A drift is stated only when the samples pin it down
// (Options: enough samples, over a long enough span, a small standard error
// and a plausible size); otherwise the estimate says insufficient evidence,
// its drift is 0 and its uncertainty includes what an unfitted drift could
// hide. A drift is never clamped. A sudden shift of all new samples by far more than the
// uncertainty is a clock jump: reported once (TakeJumps/Report) and the
// device's window restarts after it.
//
// Clock domains: devices that declare the same domain (SetClockDomain; the
// agents' Hello says which physical clock they read, e.g. one host's
// CLOCK_MONOTONIC of one boot) share one line, fitted once on all their
// samples by the domain's leader (the reference if it is a member, else the
// lowest rank): relative to each other their offset is exactly 0, with no
// fitting noise. A collective instance gives a domain one sample, the median
// of its members' ends; probes of every member feed the leader's probe fit;
// a send/recv inside a domain says nothing. Devices without a domain (old
// agents) are each a domain of their own. Imports name one domain for the
// files of one host or import ("host:<name>", "import:<job>"): with no
// probes and no other domain, every rank's offset to the reference device is
// exactly 0 and its drift 0.
//
// Usage:
//   ClockAligner aligner(&groups);
//   aligner.Add(rank, event);                    // every decoded event
//   aligner.SetClockDomain(rank, "monotonic@boot:...");  // at the rank's Hello
//   aligner.AddProbe(rank, send_unix, agent_recv, agent_send, recv_unix);
//   int64_t t = aligner.ToReference(rank, event.end_ns);
//   v1::ClockReport report = aligner.Report();   // every device's estimate
//   for (auto& j : aligner.TakeJumps()) *report.add_jumps() = j;  // once each
//
// Threading: not thread-safe; owned by the job's analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_CLOCK_ALIGNER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_CLOCK_ALIGNER_H_

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {
namespace clock_internal {
struct LineRules;
}  // namespace clock_internal

class ClockAligner : public ReferenceClock {
 public:
  struct Options {
    // Samples per device in the offset/drift fit.
    int collective_window = 64;
    // A step can run dozens of NCCL kernels (one per bucket or layer): a
    // window of several steps keeps the span that the drift needs.
    int gpu_collective_window = 256;
    int p2p_window = 512;  // send/recv bounds kept per device
    int probe_window = 128;
    // An instance is closed without its missing participants once its group
    // has reached this many sequence numbers further (dead or silent ranks).
    int max_pending_instances = 8;
    // Send/recv halves waiting for their match, per (group, sender, receiver).
    int max_pending_p2p = 256;
    // When a drift is stated (else: insufficient evidence, drift 0).
    // Over at least this span of samples: below it a line's slope is set by
    // the samples' jitter, not by the clocks.
    int64_t min_drift_span_ns = 50'000'000;
    // With at least this many samples kept: with fewer, the residuals that
    // judge the slope have too few degrees of freedom (4) to be believed.
    int min_drift_samples = 6;
    // With a standard error of at most this: real oscillators differ by up
    // to ~100 ppm, so a drift known to worse than a quarter of that cannot
    // tell one clock's drift from another's.
    double max_drift_error_ppm = 25;
    // A fitted drift beyond this is no clock's (quartz and NTP-slewed clocks
    // stay well inside 500 ppm): the samples do not follow one line
    // (mismatched instances, another clock); never clamped to it.
    double max_drift_ppm = 1000;
    // The drift an estimate without a stated drift may hide, for its
    // uncertainty: the ~100 ppm two free-running oscillators can differ by.
    double unfitted_drift_ppm = 100;
    // The scatter of one sample, assumed while the residuals of fewer than 3
    // samples cannot tell: CPU records of one collective end up to ~100 us
    // apart on a busy host (wake-ups), NCCL kernels within ~10 us.
    double collective_scatter_ns = 100'000;
    double gpu_collective_scatter_ns = 10'000;
    // How far a device's own wall-clock reading (nominal offset, no probes)
    // may be off: NTP keeps hosts of one cluster within about a millisecond.
    double nominal_uncertainty_ns = 1'000'000;
    // Send/recv bounds are combined per bucket of this span of local time.
    int64_t p2p_bucket_ns = 100'000'000;
    // Clock jumps: this many consecutive samples off the fit by at least
    // max(jump_min_ns, jump_sigmas * residual spread), agreeing with each other.
    int64_t jump_min_ns = 1'000'000;
    double jump_sigmas = 8;
    int jump_confirm = 3;
    // Samples further than this many robust deviations from the fit are left
    // out of it (late wake-ups, not clock error).
    double outlier_sigmas = 3.5;
  };

  explicit ClockAligner(GroupDirectory* groups);
  ClockAligner(GroupDirectory* groups, const Options& options);

  // Fixes the reference device (otherwise the lowest rank seen). Best called
  // before the first events: later calls drop the collective and send/recv
  // samples taken so far.
  void SetReference(uint32_t rank);
  uint32_t reference() const { return reference_; }

  // Every decoded event of `rank`, in the rank's order; only collectives,
  // sends and receives, on the CPU or as GPU kernels, are looked at (other
  // kinds cost two comparisons).
  void Add(uint32_t rank, const DeviceEvent& e) {
    if (!e.IsCollective()) return;
    AddCommunication(rank, e);
  }
  // One agent<->collector round trip: collector Unix times around the
  // agent's own clock readings.
  void AddProbe(uint32_t rank, int64_t collector_send_unix_ns, int64_t agent_receive_ns,
                int64_t agent_send_ns, int64_t collector_receive_unix_ns);
  // A prior for `rank`: Unix time minus its clock, e.g. ClockDomain's
  // sampled offset; used until anything better is known.
  void SetNominalOffset(uint32_t rank, int64_t unix_minus_local_ns);
  // Which clock `rank` reads (see the class comment); empty: its own. Best
  // called at the rank's Hello, before its events: a change of a domain's
  // leader after samples were taken drops the collective and send/recv
  // samples taken so far (as SetReference does).
  void SetClockDomain(uint32_t rank, const std::string& domain);
  // The device that fits `rank`'s domain (rank itself when it leads or has
  // no domain).
  uint32_t Leader(uint32_t rank) const {
    return rank < devices_.size() && devices_[rank].leader != kSelf ? devices_[rank].leader : rank;
  }
  // The device's stream ended: its pending collective instances stop waiting
  // for it.
  void OnDeviceClosed(uint32_t rank);

  // ReferenceClock: local + offset + drift * (local - anchor); O(1).
  int64_t ToReference(uint32_t rank, int64_t local_ns) const override;

  trainscope::v1::ClockEstimate Estimate(uint32_t rank) const;
  // Every device's estimate (jumps are not included: TakeJumps).
  trainscope::v1::ClockReport Report() const;
  // The jumps detected since the previous call, each reported once.
  std::vector<trainscope::v1::ClockJump> TakeJumps();

  uint64_t late_events() const { return late_events_; }

 private:
  static constexpr int kUnaligned = std::numeric_limits<int>::max();
  // Level of devices aligned only by probes, used as a stand-in anchor when a
  // group has no better-aligned participant.
  static constexpr int kProbeAnchorLevel = 1 << 16;
  static constexpr uint32_t kSelf = std::numeric_limits<uint32_t>::max();

  // local -> other clock: offset + slope * (local - anchor).
  struct Line {
    int64_t anchor = 0;
    int64_t offset = 0;
    double slope = 0;
    int64_t At(int64_t local) const {
      return local + offset + static_cast<int64_t>(slope * static_cast<double>(local - anchor));
    }
  };
  // One collective sample: this device's end against the instance's median
  // anchor participant's end (mapped through the anchor's current line).
  struct CollectiveSample {
    int64_t local = 0;
    int64_t anchor_local = 0;
    uint32_t anchor_rank = 0;
    uint32_t anchor_epoch = 0;
  };
  // A device's samples of one kind of collective (CPU records or GPU kernels).
  struct CollectiveWindow {
    std::deque<CollectiveSample> samples;
    std::vector<CollectiveSample> suspects;  // off the fit: a jump once they agree
  };
  // One send/recv half-bound: lower (peer sent, we received) or upper (we
  // sent, peer received) on this device's offset at `local`.
  struct P2pBound {
    int64_t local = 0;
    int64_t peer_local = 0;
    uint32_t peer = 0;
    uint32_t peer_epoch = 0;
    bool lower = false;
  };
  struct ProbeSample {
    int64_t local = 0;        // agent's mid point
    int64_t unix_offset = 0;  // Unix minus local
    int64_t rtt = 0;
  };
  struct Fit {
    Line line;
    double uncertainty = 0;
    double spread = 0;  // robust residual standard deviation
    int used = 0;
    bool ok = false;
    bool insufficient = false;  // no drift stated (see Options)
  };
  struct Device {
    bool seen = false;
    bool closed = false;
    int level = kUnaligned;  // hops from the reference in the alignment graph
    uint32_t epoch = 0;      // bumped at each jump: older samples against it are stale
    trainscope::v1::ClockSource source = trainscope::v1::CLOCK_SOURCE_UNSPECIFIED;
    Line internal;  // local -> reference device's clock
    Line out;       // local -> reference clock (ToReference)
    double uncertainty = 0;
    double spread = 0;
    bool insufficient = true;  // the line in use states no drift
    int64_t updated_local = 0;
    int64_t p2p_refit_local = 0;  // local time of the last send/recv refit
    CollectiveWindow collective;
    CollectiveWindow gpu_collective;
    std::deque<P2pBound> p2p;
    std::deque<ProbeSample> probes;
    Fit probe_fit;  // local -> Unix
    bool has_nominal = false;
    int64_t nominal = 0;
    int64_t best_rtt = -1;  // lowest probe round trip; -1: none
    uint64_t collective_samples = 0;
    uint64_t gpu_collective_samples = 0;
    uint64_t p2p_constraints = 0;
    uint64_t probe_samples = 0;
    uint32_t jumps = 0;
    std::vector<ProbeSample> probe_suspects;
    // Clock domain: a follower's fields above are copies of its leader's
    // (SyncFollower); its signals are fed to the leader.
    std::string domain;
    uint32_t leader = kSelf;
    std::vector<uint32_t> followers;  // on a leader: the rest of its domain
  };
  struct Instance {
    std::vector<std::pair<uint32_t, int64_t>> ends;  // rank, local end
    bool done = false;
  };
  // CPU and GPU collectives of one group are instances of their own: their
  // sequences may coincide while their ends do not.
  struct GroupState {
    uint32_t group = 0;
    bool gpu = false;
    std::map<uint64_t, Instance> pending;  // by group sequence
    uint64_t low_water = 0;                // below: closed
    uint64_t newest = 0;
    bool any = false;
    absl::flat_hash_map<uint32_t, uint64_t> last_sequence;  // per rank: its newest + 1
    size_t silent = 0;                                      // members not waited for
  };
  struct P2pHalf {
    uint64_t sequence = 0;
    int64_t time = 0;  // sender: start; receiver: end
  };
  struct P2pChannel {
    std::deque<P2pHalf> sends;
    std::deque<P2pHalf> recvs;
  };
  struct ChannelKey {
    uint32_t group;
    uint32_t sender;
    uint32_t receiver;
    bool gpu;  // GPU kernels and CPU records are matched apart
    bool operator==(const ChannelKey& o) const {
      return group == o.group && sender == o.sender && receiver == o.receiver && gpu == o.gpu;
    }
    template <typename H>
    friend H AbslHashValue(H h, const ChannelKey& k) {
      return H::combine(std::move(h), k.group, k.sender, k.receiver, k.gpu);
    }
  };
  static uint64_t GroupKey(uint32_t group, bool gpu) {
    return (static_cast<uint64_t>(gpu) << 32) | group;
  }
  static bool ByCollectives(trainscope::v1::ClockSource source) {
    return source == trainscope::v1::CLOCK_SOURCE_COLLECTIVES ||
           source == trainscope::v1::CLOCK_SOURCE_GPU_COLLECTIVES;
  }

  void AddCommunication(uint32_t rank, const DeviceEvent& e);
  void AddCollective(uint32_t rank, const DeviceEvent& e);
  void AddP2p(uint32_t rank, const DeviceEvent& e, bool send);
  Device& Touch(uint32_t rank);
  void MaybeCloseInstances(GroupState& state);
  bool InstanceComplete(const GroupState& state, const Instance& instance);
  void CountSilent(GroupState& state);
  void FinishInstance(const Instance& instance, bool gpu);
  void OnP2pMatch(uint32_t sender, int64_t send_start, uint32_t receiver, int64_t recv_end);
  void AddBound(uint32_t rank, const P2pBound& bound);
  void Rebase(uint32_t reference);
  // Drops every collective and send/recv sample (the alignment graph changed).
  void ResetSamples();
  // Recomputes every domain's leader and followers; a device that stops
  // leading itself hands its probes to its new leader. True when a device
  // that already took part in collectives or send/recv changed leader: the
  // samples must then be reset.
  bool AssignLeaders();
  void HandProbes(uint32_t from, uint32_t to);
  void SyncFollower(uint32_t follower);

  // Maps `local` of `rank` onto the reference device's clock with the current
  // estimate, or false when the rank has none usable from a sample of epoch.
  bool Internal(uint32_t rank, uint32_t epoch, int64_t local, int64_t* out) const;
  void Refit(uint32_t rank);
  // The device's line through Unix time (its probes or nominal offset) and
  // the reference device's probes; false when there is neither.
  bool ProbeCandidate(const Device& d, Line* line, double* uncertainty, bool* insufficient) const;
  bool FitCollectives(Device& d, bool gpu, Fit* fit);
  bool FitP2p(uint32_t rank, Device& d, Fit* fit, double* anchor_unc);
  // Shifts a line fitted on `window` into the send/recv bounds of its span.
  void ClipToP2p(const Device& d, const CollectiveWindow& window, Line* line) const;
  void FitProbes(Device& d);
  void CheckCollectiveJump(uint32_t rank, Device& d, bool gpu, const CollectiveSample& s);
  void RecordJump(uint32_t rank, int64_t local, int64_t size, const char* by);
  // A leader's out line, then its followers' copies; a follower: its copy.
  void Publish(uint32_t rank, Device& d);
  void PublishLine(uint32_t rank, Device& d);
  void PublishAll();
  // The reference device's clock -> Unix time (its probe line).
  Line ReferenceLine() const;
  // When a line states a drift (Options), for samples of this scatter.
  clock_internal::LineRules Rules(double prior_spread) const;
  // The uncertainty of the anchor the window's newest sample was taken against.
  double AnchorUncertainty(const CollectiveWindow& window) const;

  GroupDirectory* const groups_;
  const Options options_;
  uint32_t reference_ = std::numeric_limits<uint32_t>::max();
  bool reference_fixed_ = false;  // set by SetReference
  std::vector<Device> devices_;
  absl::flat_hash_map<uint64_t, GroupState> group_states_;  // by GroupKey
  absl::flat_hash_map<ChannelKey, P2pChannel> channels_;
  std::vector<trainscope::v1::ClockJump> new_jumps_;
  uint64_t late_events_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_CLOCK_ALIGNER_H_
