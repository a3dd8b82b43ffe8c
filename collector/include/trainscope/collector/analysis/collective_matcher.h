// Matches the arrivals of communication instances across the devices of a
// job, and gives each communication operator its wait and each instance its
// links once.
//
// A collective instance is (group, group_sequence); its participants are
// GroupDirectory's members of the group (the devices known, when the group
// lists none). A send/recv pair (group, sender, receiver, sequence) is an
// instance of two. An operator's wait runs from its aligned start until the
// latest aligned start of the instance's participants known when its step
// closes; the rest is transfer. Links: every matched send/recv pair gives a
// "p2p" link sender->receiver with the receiver's transfer time (recv end -
// max(send start, recv start)); ring collectives (all-reduce, all-gather,
// reduce-scatter) give "collective" links member i -> member i+1 (ascending
// ranks, NCCL's ring model) carrying 2(P-1)/P (all-reduce) or (P-1)/P of
// the bytes, with the receiving member's transfer time; other collectives
// are not attributed to links. An instance's links are reported at the
// first Match that finds it complete. With a TrafficModel (EnableTraffic),
// the same Match also adds the instance's per-pair traffic to
// Links::traffic: send/recv counted exactly, every collective kind through
// the backend's algorithm over the group's members (docs/traffic.md).
//
// Usage:
//   CollectiveMatcher matcher(&groups, &clock, [&] { return device_count; });
//   matcher.NoteArrival(rank, collective_event, step);  // as events arrive
//   CollectiveMatcher::Wait w = matcher.Match(op, &links);  // as steps close
//   matcher.ForgetOlderThan(closed_step, retention_steps);
//
// Threading: not thread-safe; owned by the StepAssembler's thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_COLLECTIVE_MATCHER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_COLLECTIVE_MATCHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/collector/analysis/group_directory.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/collector/analysis/traffic_model.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class CollectiveMatcher {
 public:
  static constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();

  // A directed link between two ranks, of one kind.
  struct LinkKey {
    uint32_t src;
    uint32_t dst;
    bool collective;  // a ring collective's, else p2p
    bool operator<(const LinkKey& o) const {
      return std::tie(src, dst, collective) < std::tie(o.src, o.dst, o.collective);
    }
  };
  // A link's transfers in one step.
  struct LinkTotals {
    uint64_t bytes = 0;
    int64_t duration_ns = 0;
    uint32_t transfers = 0;
  };
  // Traffic from one device to another in one process group, in one step.
  struct PairKey {
    uint32_t src;
    uint32_t dst;
    uint32_t group;  // JobStrings id
    bool exact;      // send/recv, else a collective's modelled flows
    bool operator<(const PairKey& o) const {
      return std::tie(src, dst, group, exact) < std::tie(o.src, o.dst, o.group, o.exact);
    }
  };
  struct PairTotals {
    uint64_t bytes = 0;
    uint32_t messages = 0;
    int64_t duration_ns = 0;  // the receiver's transfer time, per instance
    TrafficModel::Backend backend = TrafficModel::Backend::kGloo;
  };
  // A step's ring/p2p links (the map) and its per-pair traffic. The links
  // stay a map so that their readers index it directly.
  struct Links : std::map<LinkKey, LinkTotals> {
    std::map<PairKey, PairTotals> traffic;
    // Both: a reused Links (a GPU device's dropped host links) must not
    // keep old steps' traffic.
    void clear() {
      std::map<LinkKey, LinkTotals>::clear();
      traffic.clear();
    }
  };

  // One communication operator's share of its instance.
  struct Wait {
    int64_t wait_ns = 0;            // until the latest participant's start
    uint32_t waited_for = kNoRank;  // that participant (kNoRank: no instance)
    // For a complete collective: the operator's arrival after the
    // instance's earliest (0 otherwise: a receive is late by design).
    int64_t lateness_ns = 0;
  };

  // `known_devices`: the participants of a group without listed members.
  // The pointers must outlive the matcher.
  CollectiveMatcher(GroupDirectory* groups, const ReferenceClock* clock,
                    std::function<uint32_t()> known_devices);

  // `rank` arrived at a COLLECTIVE event (raw times). `step` is the first
  // step whose close may need the instance (ForgetOlderThan counts from it).
  void NoteArrival(uint32_t rank, const DeviceEvent& e, uint64_t step);
  // Derives per-pair traffic (Links::traffic) with `model` from now on;
  // null: none (the default). `nccl_kernels`: the instances are NCCL
  // kernels, so their backend is NCCL whatever the rank's host uses.
  void EnableTraffic(const TrafficModel* model, bool nccl_kernels) {
    traffic_model_ = model;
    nccl_kernels_ = nccl_kernels;
  }

  // The wait of one aligned communication operator of a closing step; adds
  // its instance's links to `links` the first time the instance is complete.
  Wait Match(const OperatorRecord& op, Links* links);
  // Forgets instances first needed more than `retention_steps` before
  // `closed_step` (a member that never reports them).
  void ForgetOlderThan(uint64_t closed_step, uint64_t retention_steps);

  // Of per-rank waits (rank -> time waited on it): the rank waited for
  // longest, the lowest of a tie; -1 when none.
  static int32_t MostWaitedFor(const absl::flat_hash_map<uint32_t, int64_t>& waited);

  // Waits matched before every participant arrived, so far.
  uint64_t incomplete() const { return incomplete_; }

 private:
  struct InstanceKey {
    uint32_t group;
    uint32_t src;  // p2p: the sender; collectives: kNoRank
    uint32_t dst;  // p2p: the receiver
    uint64_t sequence;
    bool operator==(const InstanceKey& o) const {
      return group == o.group && src == o.src && dst == o.dst && sequence == o.sequence;
    }
    template <typename H>
    friend H AbslHashValue(H h, const InstanceKey& k) {
      return H::combine(std::move(h), k.group, k.src, k.dst, k.sequence);
    }
  };
  struct Arrival {
    uint32_t rank;
    int64_t raw_start_ns;
    int64_t raw_end_ns;
    uint64_t bytes;
  };
  struct Instance {
    absl::InlinedVector<Arrival, 2> arrivals;
    trainscope::v1::CollectiveKind kind = trainscope::v1::COLLECTIVE_KIND_UNSPECIFIED;
    uint32_t consumed = 0;  // arrivals whose step has closed
    bool links_reported = false;
    // Latest aligned arrival, cached for `cached_arrivals` arrivals.
    uint32_t cached_arrivals = 0;
    int64_t latest_start_ns = 0;
    uint32_t latest_rank = 0;
    int64_t earliest_start_ns = 0;
  };

  uint32_t ExpectedParticipants(const InstanceKey& key);
  void UpdateLatest(Instance& inst);
  void ReportLinks(const InstanceKey& key, const Instance& inst, Links* links);
  void ReportTraffic(const InstanceKey& key, const Instance& inst, Links* links);

  GroupDirectory* const groups_;
  const ReferenceClock* const clock_;
  const std::function<uint32_t()> known_devices_;
  absl::flat_hash_map<InstanceKey, Instance> instances_;
  std::deque<std::pair<uint64_t, InstanceKey>> order_;  // (first step, key)
  uint64_t incomplete_ = 0;
  const TrafficModel* traffic_model_ = nullptr;
  bool nccl_kernels_ = false;
  // Scratch of ReportTraffic.
  std::vector<TrafficModel::Flow> flows_;
  std::vector<uint32_t> members_;
  absl::flat_hash_map<uint32_t, int64_t> receive_end_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_COLLECTIVE_MATCHER_H_
