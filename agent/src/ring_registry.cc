#include "ring_registry.h"

#include <algorithm>
#include <bit>

namespace trainscope::agent {

namespace {
uint64_t RingBytes(size_t capacity) { return sizeof(ThreadRing) + capacity * sizeof(EventRecord); }
}  // namespace

RingRegistry::RingRegistry(uint64_t agent_serial, size_t ring_capacity, uint64_t budget_bytes)
    : agent_serial_(agent_serial), ring_capacity_(ring_capacity), budget_bytes_(budget_bytes) {}

RingRegistry::~RingRegistry() {
  base::MutexLock lock(&mu_);
  for (auto& ring : rings_) ring->MarkAgentGone();
}

std::shared_ptr<ThreadRing> RingRegistry::CreateRing(uint32_t os_thread_id) {
  base::MutexLock lock(&mu_);
  const uint64_t left = budget_bytes_ > bytes_in_use_ ? budget_bytes_ - bytes_in_use_ : 0;
  size_t capacity = ring_capacity_;
  while (capacity >= kMinRingCapacity && RingBytes(capacity) > left) capacity /= 2;
  if (capacity < kMinRingCapacity) capacity = 0;
  auto ring = std::make_shared<ThreadRing>(agent_serial_, os_thread_id, capacity);
  bytes_in_use_ += RingBytes(capacity);
  rings_.push_back(ring);
  return ring;
}

std::vector<std::shared_ptr<ThreadRing>> RingRegistry::Snapshot() const {
  base::MutexLock lock(&mu_);
  return rings_;
}

void RingRegistry::RetireExitedAndEmpty() {
  base::MutexLock lock(&mu_);
  auto retire = [this](const std::shared_ptr<ThreadRing>& ring) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!ring->producer_exited() || ring->ring().size() != 0) return false;
    retired_.recorded += ring->recorded();
    retired_.dropped_full += ring->dropped_full();
    retired_.sampled_out += ring->sampled_out();
    bytes_in_use_ -= RingBytes(ring->ring().capacity());
    return true;
  };
  rings_.erase(std::remove_if(rings_.begin(), rings_.end(), retire), rings_.end());
}

RingRegistry::Totals RingRegistry::Sum() const {
  base::MutexLock lock(&mu_);
  Totals totals = retired_;
  for (const auto& ring : rings_) {
    // consumed before pushed: waiting is never negative.
    const uint64_t consumed = ring->ring().consumed();
    const uint64_t pushed = ring->recorded();
    totals.recorded += pushed;
    totals.waiting += pushed - consumed;
    totals.dropped_full += ring->dropped_full();
    totals.sampled_out += ring->sampled_out();
  }
  return totals;
}

uint64_t RingRegistry::bytes_in_use() const {
  base::MutexLock lock(&mu_);
  return bytes_in_use_;
}

}  // namespace trainscope::agent
