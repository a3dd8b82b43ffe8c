#include "trainscope/tier/recent_ids.h"

namespace trainscope::tier {

void RecentIds::Expire(absl::Time now) {
  while (!order_.empty() && (order_.size() > max_ids_ || now - order_.front().first > max_age_)) {
    auto it = ids_.find(order_.front().second);
    // A re-inserted id has a newer time in ids_: only its newest entry erases it.
    if (it != ids_.end() && it->second == order_.front().first) ids_.erase(it);
    order_.pop_front();
  }
}

bool RecentIds::Insert(absl::string_view id, absl::Time now) {
  Expire(now);
  if (ids_.contains(id)) return false;
  ids_.emplace(std::string(id), now);
  order_.emplace_back(now, std::string(id));
  Expire(now);
  return true;
}

}  // namespace trainscope::tier
