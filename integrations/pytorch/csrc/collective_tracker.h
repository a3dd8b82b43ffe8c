// Process-group names and per-group sequence numbers of collectives.
//
// Usage:
//   CollectiveTracker tracker(agent);
//   CollectiveTracker::Tag tag = tracker.MakeTag(/*peer=*/1, "pg:1[0,1]");  // Python wrapper
//   ... the tag travels with the call (collective_tag.h) to the observer ...
//   uint64_t seq = tracker.NextSequence(tag.group, /*peer=*/tag.peer, /*p2p=*/true);
//
// Every rank issues a group's collectives in the same order, so a count per
// group in this process lines the same collective up across ranks. Sends and
// receives are counted per (group, peer) instead: the n-th send to rank 3
// pairs with rank 3's n-th receive from here, and ranks not involved keep
// their collective counts in step.
//
// c10d's RecordFunction events name neither the group nor the peer, so the
// Python wrappers around torch.distributed tag the call (collective_tag.h);
// the observer reads the tag when the c10d work item starts. Untagged
// collectives belong to the default group.
//
// Threading: MakeTag, NextSequence and GroupId take a mutex (collectives are
// rare); callable from any thread.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_COLLECTIVE_TRACKER_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_COLLECTIVE_TRACKER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "trainscope/agent/agent.h"
#include "trainscope/base/mutex.h"

namespace trainscope::pytorch {

class CollectiveTracker {
 public:
  static constexpr std::string_view kDefaultGroup = "default_pg";

  explicit CollectiveTracker(agent::Agent* agent);

  struct Tag {
    agent::StringId group = agent::kEmptyString;
    int32_t peer = -1;
  };

  // The tag of a call on `group` ("": the default group) with `peer` (-1: none).
  Tag MakeTag(int32_t peer, std::string_view group);
  Tag DefaultTag() const { return Tag{default_group_, -1}; }
  // Tells this tracker's tags from another session's.
  uint64_t serial() const { return serial_; }

  uint64_t NextSequence(agent::StringId group, int32_t peer, bool point_to_point);
  agent::StringId GroupId(std::string_view group);
  agent::StringId default_group() const { return default_group_; }

 private:
  agent::Agent* const agent_;
  const agent::StringId default_group_;
  const uint64_t serial_;  // tells this tracker's thread tags from another session's
  base::Mutex mu_;
  absl::flat_hash_map<std::pair<agent::StringId, int32_t>, uint64_t> sequences_;  // mu_
  absl::flat_hash_map<std::string, agent::StringId> groups_;                      // mu_
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_COLLECTIVE_TRACKER_H_
