#include "trainscope/tier/publish_buffer.h"

#include <utility>

namespace trainscope::tier {

bool PublishBuffer::Push(Item item) {
  base::MutexLock lock(&mu_);
  const uint64_t bytes = item.payload.size();
  if (!items_.empty() && counters_.queued_bytes + bytes > max_bytes_) {
    ++counters_.refused;
    return false;
  }
  counters_.queued_bytes += bytes;
  ++counters_.queued;
  ++counters_.pushed;
  items_.push_back(std::move(item));
  ready_.Signal();
  return true;
}

std::vector<PublishBuffer::Item> PublishBuffer::Take(size_t max_items, absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  base::MutexLock lock(&mu_);
  while (items_.empty() && !woken_ && !ready_.WaitWithDeadline(&mu_, deadline)) {
  }
  woken_ = false;
  std::vector<Item> out;
  while (!items_.empty() && out.size() < max_items) {
    counters_.queued_bytes -= items_.front().payload.size();
    --counters_.queued;
    out.push_back(std::move(items_.front()));
    items_.pop_front();
  }
  return out;
}

void PublishBuffer::Wake() {
  base::MutexLock lock(&mu_);
  woken_ = true;
  ready_.SignalAll();
}

PublishBuffer::Counters PublishBuffer::counters() const {
  base::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace trainscope::tier
