#include "trainscope/collector/analysis/step_buffer_pool.h"

#include <utility>

namespace trainscope::collector {

std::unique_ptr<DeviceStepBuffer> StepBufferPool::TakeBuffer(size_t events) {
  std::unique_ptr<DeviceStepBuffer> buffer;
  if (buffers_.empty()) {
    buffer = std::make_unique<DeviceStepBuffer>();
  } else {
    buffer = std::move(buffers_.back());
    buffers_.pop_back();
  }
  buffer->events.reserve(events);
  return buffer;
}

void StepBufferPool::GiveBuffer(std::unique_ptr<DeviceStepBuffer> buffer) {
  if (buffer == nullptr || buffers_.size() >= kMaxBuffers) return;
  buffer->Reset();
  buffers_.push_back(std::move(buffer));
}

std::vector<OperatorRecord> StepBufferPool::TakeOperators() {
  std::vector<OperatorRecord> storage = std::move(operators_);
  operators_ = {};
  storage.clear();
  return storage;
}

void StepBufferPool::GiveOperators(std::vector<OperatorRecord>&& storage) {
  if (storage.capacity() > operators_.capacity()) operators_ = std::move(storage);
}

}  // namespace trainscope::collector
