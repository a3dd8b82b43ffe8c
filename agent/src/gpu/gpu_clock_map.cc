#include "gpu/gpu_clock_map.h"

namespace trainscope::agent {

void GpuClockMap::AddSample(int64_t agent_before_ns, uint64_t cupti_ns, int64_t agent_after_ns) {
  if (agent_after_ns < agent_before_ns) return;  // not a bracket
  const int64_t width = agent_after_ns - agent_before_ns;
  if (width >= best_width_) return;
  best_width_ = width;
  // Wrapping arithmetic: realtime and monotonic differ by decades of ns.
  const uint64_t mid = static_cast<uint64_t>(agent_before_ns) + static_cast<uint64_t>(width / 2);
  best_offset_ = static_cast<int64_t>(mid - cupti_ns);
}

bool GpuClockMap::Commit() {
  if (best_width_ == std::numeric_limits<int64_t>::max()) return false;
  offset_ns_.store(best_offset_, std::memory_order_relaxed);
  uncertainty_ns_.store(best_width_ / 2, std::memory_order_relaxed);
  has_offset_.store(true, std::memory_order_release);
  best_width_ = std::numeric_limits<int64_t>::max();
  return true;
}

}  // namespace trainscope::agent
