#include "gpu/collective_launch_table.h"

#include <algorithm>

namespace trainscope::agent {

CollectiveLaunchTable::CollectiveLaunchTable(size_t slots) : slots_(std::max<size_t>(slots, 1)) {}

uint64_t CollectiveLaunchTable::Register(const GpuCollectiveLaunch& launch) {
  base::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  slots_[id % slots_.size()] = Slot{id, launch};
  return id;
}

std::optional<GpuCollectiveLaunch> CollectiveLaunchTable::Lookup(uint64_t id) const {
  base::MutexLock lock(&mu_);
  const Slot& slot = slots_[id % slots_.size()];
  if (id == 0 || slot.id != id) return std::nullopt;
  return slot.launch;
}

}  // namespace trainscope::agent
