#include "trainscope/collector/analysis/group_directory.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace trainscope::collector {
namespace {

bool IsDefaultGroup(absl::string_view name) { return name.empty() || name == "default_pg"; }

std::vector<uint32_t> AllRanks(uint32_t world_size) {
  std::vector<uint32_t> ranks(world_size);
  for (uint32_t r = 0; r < world_size; ++r) ranks[r] = r;
  return ranks;
}

}  // namespace

void GroupDirectory::set_world_size(uint32_t world_size) {
  if (world_size == world_size_) return;
  world_size_ = world_size;
  // Default groups span the world: recompute them.
  for (auto& [id, entry] : groups_) {
    if (IsDefaultGroup(strings_->Get(id))) entry.members = AllRanks(world_size_);
  }
}

std::optional<std::vector<uint32_t>> GroupDirectory::ParseRanks(absl::string_view name) {
  if (name.empty() || name.back() != ']') return std::nullopt;
  const size_t open = name.rfind('[');
  if (open == absl::string_view::npos) return std::nullopt;
  absl::string_view list = name.substr(open + 1, name.size() - open - 2);
  std::vector<uint32_t> ranks;
  if (list.empty()) return std::nullopt;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    uint32_t r = 0;
    if (!absl::SimpleAtoi(part, &r)) return std::nullopt;
    ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

GroupDirectory::Entry& GroupDirectory::Lookup(uint32_t group) {
  auto [it, inserted] = groups_.try_emplace(group);
  if (inserted) {
    absl::string_view name = strings_->Get(group);
    if (IsDefaultGroup(name)) {
      it->second.members = AllRanks(world_size_);
      it->second.known = true;
    } else if (auto ranks = ParseRanks(name)) {
      it->second.members = *std::move(ranks);
      it->second.known = true;
    }
  }
  return it->second;
}

void GroupDirectory::NoteUse(uint32_t group, uint32_t rank) {
  Entry& e = Lookup(group);
  if (e.known) return;
  auto it = std::lower_bound(e.members.begin(), e.members.end(), rank);
  if (it == e.members.end() || *it != rank) e.members.insert(it, rank);
}

const std::vector<uint32_t>& GroupDirectory::Members(uint32_t group) {
  return Lookup(group).members;
}

bool GroupDirectory::MembershipKnown(uint32_t group) { return Lookup(group).known; }

}  // namespace trainscope::collector
