#include "gpu/activity_buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace trainscope::agent {

void ActivityBufferPool::Free::operator()(uint8_t* p) const { std::free(p); }

ActivityBufferPool::ActivityBufferPool(size_t buffer_bytes, size_t max_buffers)
    // aligned_alloc wants a size that is a multiple of the alignment.
    : buffer_bytes_((std::max<size_t>(buffer_bytes, kAlignment) + kAlignment - 1) / kAlignment *
                    kAlignment),
      max_buffers_(max_buffers) {}

ActivityBufferPool::~ActivityBufferPool() = default;

uint8_t* ActivityBufferPool::Acquire() {
  base::MutexLock lock(&mu_);
  if (!free_.empty()) {
    uint8_t* buffer = free_.back();
    free_.pop_back();
    ++in_use_;
    return buffer;
  }
  if (owned_.size() >= max_buffers_) {
    ++refused_;
    return nullptr;
  }
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, buffer_bytes_));
  if (buffer == nullptr) {
    ++refused_;
    return nullptr;
  }
  owned_.emplace_back(buffer);
  ++in_use_;
  return buffer;
}

void ActivityBufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  base::MutexLock lock(&mu_);
  const bool ours = std::any_of(owned_.begin(), owned_.end(),
                                [buffer](const auto& owned) { return owned.get() == buffer; });
  if (!ours || std::find(free_.begin(), free_.end(), buffer) != free_.end()) {
    ++foreign_releases_;
    return;
  }
  free_.push_back(buffer);
  --in_use_;
}

size_t ActivityBufferPool::ReclaimAll() {
  base::MutexLock lock(&mu_);
  const size_t out = in_use_;
  free_.clear();
  for (const auto& owned : owned_) free_.push_back(owned.get());
  in_use_ = 0;
  reclaimed_ += out;
  return out;
}

uint64_t ActivityBufferPool::reclaimed() const {
  base::MutexLock lock(&mu_);
  return reclaimed_;
}

size_t ActivityBufferPool::in_use() const {
  base::MutexLock lock(&mu_);
  return in_use_;
}

size_t ActivityBufferPool::allocated() const {
  base::MutexLock lock(&mu_);
  return owned_.size();
}

uint64_t ActivityBufferPool::refused() const {
  base::MutexLock lock(&mu_);
  return refused_;
}

uint64_t ActivityBufferPool::foreign_releases() const {
  base::MutexLock lock(&mu_);
  return foreign_releases_;
}

}  // namespace trainscope::agent
