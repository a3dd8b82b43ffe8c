#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {

JobStrings::JobStrings() { Intern(""); }

uint32_t JobStrings::Intern(absl::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(strings_.back(), id);
  return id;
}

uint32_t JobStrings::Find(absl::string_view s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? 0 : it->second;
}

absl::string_view JobStrings::Get(uint32_t id) const {
  return id < strings_.size() ? absl::string_view(strings_[id]) : absl::string_view();
}

}  // namespace trainscope::collector
