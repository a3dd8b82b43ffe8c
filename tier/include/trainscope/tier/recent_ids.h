// A set of ids remembered for a bounded time and count: the tier's command
// dedup (the job level turns the same Control seen on every rank stream of a
// job into one TierCommand; a node runs each command id once). Dedup only
// needs to span the moment a command takes to arrive through every stream or
// a redelivery, so ids older than `max_age`, and the oldest beyond
// `max_ids`, are forgotten; a command seen again after that is idempotent
// downstream (JetStream's duplicate window, the node's own RecentIds, a halt
// of a halted job).
//
// Usage:
//   RecentIds seen(absl::Minutes(10), 100000);
//   if (!seen.Insert(id, absl::Now())) return;  // seen lately
//
// Threading: not thread-safe; the owner serializes calls.
#ifndef TRAINSCOPE_TIER_RECENT_IDS_H_
#define TRAINSCOPE_TIER_RECENT_IDS_H_

#include <cstddef>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace trainscope::tier {

class RecentIds {
 public:
  RecentIds(absl::Duration max_age, size_t max_ids) : max_age_(max_age), max_ids_(max_ids) {}

  // True when `id` was not seen within the bounds (and remembers it now).
  bool Insert(absl::string_view id, absl::Time now);
  size_t size() const { return order_.size(); }

 private:
  void Expire(absl::Time now);

  const absl::Duration max_age_;
  const size_t max_ids_;
  std::deque<std::pair<absl::Time, std::string>> order_;  // oldest first
  absl::flat_hash_map<std::string, absl::Time> ids_;      // id -> when inserted
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_RECENT_IDS_H_
