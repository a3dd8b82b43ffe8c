#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {

JobStrings::JobStrings(JobStringsOptions options) : options_(options) { Add(""); }

uint32_t JobStrings::Add(absl::string_view s) {
  const uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(strings_.back(), id);
  return id;
}

uint32_t JobStrings::Intern(absl::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const bool names_full = options_.max_names != 0 && names() >= options_.max_names;
  const bool bytes_full = options_.max_bytes != 0 && bytes_ + s.size() > options_.max_bytes;
  if (names_full || bytes_full) {
    // The over-budget name is added once, outside the budget, so that a
    // refused name still reads as something that says why.
    if (over_budget_id_ == 0) over_budget_id_ = Add(kOverBudgetName);
    ++over_budget_;
    return over_budget_id_;
  }
  bytes_ += s.size();
  return Add(s);
}

uint32_t JobStrings::Find(absl::string_view s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? 0 : it->second;
}

absl::string_view JobStrings::Get(uint32_t id) const {
  return id < strings_.size() ? absl::string_view(strings_[id]) : absl::string_view();
}

}  // namespace trainscope::collector
