#include "gpu/gpu_event_queue.h"

namespace trainscope::agent {

bool GpuEventQueue::Push(const GpuEventRecord& event) {
  base::MutexLock lock(&producer_mu_);
  if (ring_.TryPush(event)) return true;
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace trainscope::agent
