// Which ranks take part in each process group's collectives, so that the
// analysis knows when every participant of a collective instance reported it.
//
// Membership comes from the group's name when it lists its ranks (the
// PyTorch plugin names groups "pg:<name>[0,2]"), is every rank for the
// default group ("" or "default_pg"), and otherwise is learned from the
// ranks seen using the group (MembershipKnown() is false then).
//
// Usage:
//   GroupDirectory groups(&strings);
//   groups.set_world_size(4);
//   groups.NoteUse(group_id, rank);
//   for (uint32_t r : groups.Members(group_id)) ...
//
// Threading: not thread-safe; owned by the analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_GROUP_DIRECTORY_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_GROUP_DIRECTORY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {

class GroupDirectory {
 public:
  explicit GroupDirectory(const JobStrings* strings) : strings_(strings) {}

  void set_world_size(uint32_t world_size);
  uint32_t world_size() const { return world_size_; }

  // Records that `rank` used `group` (learns members of unnamed groups).
  void NoteUse(uint32_t group, uint32_t rank);
  // The group's ranks, ascending.
  const std::vector<uint32_t>& Members(uint32_t group);
  // False when the members are only the ranks seen so far.
  bool MembershipKnown(uint32_t group);

  // "[0,2,5]" at the end of `name` -> {0,2,5}; nullopt when absent/malformed.
  static std::optional<std::vector<uint32_t>> ParseRanks(absl::string_view name);

 private:
  struct Entry {
    std::vector<uint32_t> members;
    bool known = false;
  };
  Entry& Lookup(uint32_t group);

  const JobStrings* const strings_;
  uint32_t world_size_ = 0;
  absl::flat_hash_map<uint32_t, Entry> groups_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_GROUP_DIRECTORY_H_
