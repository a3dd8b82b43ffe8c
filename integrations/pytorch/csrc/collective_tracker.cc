#include "collective_tracker.h"

#include <atomic>

namespace trainscope::pytorch {
namespace {

struct ThreadTag {
  uint64_t serial = 0;  // 0: no tag
  CollectiveTracker::Tag tag;
};
thread_local ThreadTag t_tag;

std::atomic<uint64_t> g_next_serial{1};

}  // namespace

CollectiveTracker::CollectiveTracker(agent::Agent* agent)
    : agent_(agent),
      default_group_(agent->Intern(kDefaultGroup)),
      serial_(g_next_serial.fetch_add(1)) {}

void CollectiveTracker::SetThreadTag(int32_t peer, std::string_view group) {
  t_tag.serial = serial_;
  t_tag.tag.peer = peer;
  t_tag.tag.group = group.empty() ? default_group_ : GroupId(group);
}

void CollectiveTracker::ClearThreadTag() { t_tag.serial = 0; }

CollectiveTracker::Tag CollectiveTracker::TakeThreadTag() {
  if (t_tag.serial != serial_) return Tag{default_group_, -1};
  t_tag.serial = 0;
  return t_tag.tag;
}

uint64_t CollectiveTracker::NextSequence(agent::StringId group, int32_t peer, bool point_to_point) {
  std::lock_guard<std::mutex> lock(mu_);
  // Collectives count per group; -2 keeps them apart from any peer's count.
  return ++sequences_[{group, point_to_point ? peer : -2}];
}

agent::StringId CollectiveTracker::GroupId(std::string_view group) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(absl::string_view(group.data(), group.size()));
  if (it != groups_.end()) return it->second;
  const agent::StringId id = agent_->Intern(group);
  groups_.emplace(std::string(group), id);
  return id;
}

}  // namespace trainscope::pytorch
