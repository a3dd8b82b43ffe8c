#include "collective_tracker.h"

#include <atomic>

namespace trainscope::pytorch {
namespace {

std::atomic<uint64_t> g_next_serial{1};

}  // namespace

CollectiveTracker::CollectiveTracker(agent::Agent* agent)
    : agent_(agent),
      default_group_(agent->Intern(kDefaultGroup)),
      serial_(g_next_serial.fetch_add(1)) {}

CollectiveTracker::Tag CollectiveTracker::MakeTag(int32_t peer, std::string_view group) {
  return Tag{group.empty() ? default_group_ : GroupId(group), peer};
}

uint64_t CollectiveTracker::NextSequence(agent::StringId group, int32_t peer, bool point_to_point) {
  base::MutexLock lock(&mu_);
  // Collectives count per group; -2 keeps them apart from any peer's count.
  return ++sequences_[{group, point_to_point ? peer : -2}];
}

agent::StringId CollectiveTracker::GroupId(std::string_view group) {
  base::MutexLock lock(&mu_);
  auto it = groups_.find(absl::string_view(group.data(), group.size()));
  if (it != groups_.end()) return it->second;
  const agent::StringId id = agent_->Intern(group);
  groups_.emplace(std::string(group), id);
  return id;
}

}  // namespace trainscope::pytorch
