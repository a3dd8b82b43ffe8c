// The memory of closed steps, kept for the steps still to come: a device's
// step buffer (with its events' storage) and a step's operator storage are
// as large as the last ones, so reusing them saves an allocation per device
// per step (one step's buffers are as many allocations as devices) and the
// growth of every vector. At most kMaxBuffers buffers are kept (a few
// steps' worth of devices); the operator storage kept is the largest given.
//
// Usage (StepAssembler):
//   StepBufferPool pool;
//   std::unique_ptr<DeviceStepBuffer> b = pool.TakeBuffer(expected_events);
//   pool.GiveBuffer(std::move(b));              // its step closed
//   std::vector<OperatorRecord> ops = pool.TakeOperators();   // empty
//   pool.GiveOperators(std::move(evicted_ops));  // their owner is done
//
// Threading: not thread-safe; owned by the job's analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_BUFFER_POOL_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_BUFFER_POOL_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "trainscope/collector/analysis/device_step_buffer.h"
#include "trainscope/collector/analysis/operator_record.h"

namespace trainscope::collector {

class StepBufferPool {
 public:
  static constexpr size_t kMaxBuffers = 4096;

  // An empty buffer with room for `events` events.
  std::unique_ptr<DeviceStepBuffer> TakeBuffer(size_t events);
  // Keeps `buffer` (emptied, its storage kept) unless kMaxBuffers are kept.
  void GiveBuffer(std::unique_ptr<DeviceStepBuffer> buffer);
  size_t buffers() const { return buffers_.size(); }

  // Empty operator storage, with the capacity of the largest given.
  std::vector<OperatorRecord> TakeOperators();
  // Keeps `storage` when it is larger than what is kept.
  void GiveOperators(std::vector<OperatorRecord>&& storage);

 private:
  std::vector<std::unique_ptr<DeviceStepBuffer>> buffers_;  // reset
  std::vector<OperatorRecord> operators_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_BUFFER_POOL_H_
