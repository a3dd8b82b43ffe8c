#include "trainscope/collector/analysis/gpu_work_progress.h"

#include <algorithm>

namespace trainscope::collector {

GpuWorkProgress::Before GpuWorkProgress::Note(uint64_t stream, int64_t launch_ns) {
  gpu_ = true;
  seen_ = true;
  auto [it, inserted] = stream_launch_.try_emplace(stream, launch_ns);
  const Before before{inserted ? std::numeric_limits<int64_t>::min() : it->second, max_launch_ns_};
  it->second = std::max(it->second, launch_ns);
  max_launch_ns_ = std::max(max_launch_ns_, launch_ns);
  return before;
}

bool GpuWorkProgress::Awaits(uint64_t step, const DeviceStepBuffer* buffer,
                             const DeviceStepBuffer* next) const {
  if (!gpu_ || static_cast<int64_t>(step) <= released_through_) return false;
  // A step the device never ended (it left, or was dropped) awaits nothing.
  if (buffer == nullptr || !buffer->ended) return false;
  const int64_t end = buffer->end_raw_ns;
  // Work launched after the next step's end: this step's is long done.
  if (next != nullptr && next->ended && max_launch_ns_ >= next->end_raw_ns) return false;
  if (buffer->gpu_streams.empty()) return max_launch_ns_ < end;
  for (uint64_t stream : buffer->gpu_streams) {
    auto s = stream_launch_.find(stream);
    if (s == stream_launch_.end() || s->second < end) return true;
  }
  return false;
}

bool GpuWorkProgress::BoundWait(uint64_t step, bool awaiting, int64_t now_ns, int64_t wait_ns) {
  if (!awaiting) {
    waiting_ = false;
    return false;
  }
  if (!waiting_ || wait_step_ != step) {
    waiting_ = true;
    wait_step_ = step;
    wait_since_ns_ = now_ns;
    return false;
  }
  if (now_ns - wait_since_ns_ < wait_ns) return false;
  waiting_ = false;
  released_through_ = static_cast<int64_t>(step);
  // It said it has GPUs but delivers no work: stop waiting for it.
  if (!seen_) gpu_ = false;
  return true;
}

}  // namespace trainscope::collector
