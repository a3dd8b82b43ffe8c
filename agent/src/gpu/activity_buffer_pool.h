// The bounded pool of buffers CUPTI writes activity records into.
//
// Usage (CUPTI's buffer callbacks):
//   ActivityBufferPool pool(/*buffer_bytes=*/4 << 20, /*max_buffers=*/16);
//   requested:  uint8_t* b = pool.Acquire();   // nullptr: none free, CUPTI drops records
//   completed:  ... read the records ...; pool.Release(b);
//
// At most max_buffers buffers ever exist (allocated on first need, then
// reused), so the tracer's memory is bounded by buffer_bytes * max_buffers
// however far behind the drain falls. A refused request is counted
// (refused()); CUPTI then drops the records it could not store and reports
// how many (cuptiActivityGetNumDroppedRecords), which the tracer counts too.
// Buffers are 8-byte aligned, as CUPTI requires.
//
// Threading: thread-safe (CUPTI requests and completes buffers on its own
// threads and on the thread that calls a flush).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_ACTIVITY_BUFFER_POOL_H_
#define TRAINSCOPE_AGENT_SRC_GPU_ACTIVITY_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class ActivityBufferPool {
 public:
  static constexpr size_t kAlignment = 8;

  ActivityBufferPool(size_t buffer_bytes, size_t max_buffers);
  ~ActivityBufferPool();
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  uint8_t* Acquire();
  // `buffer` must come from Acquire; a foreign pointer is ignored and counted.
  void Release(uint8_t* buffer);
  // Takes back every buffer still out; returns how many. Only when CUPTI can
  // hold none of them: after its kinds were disabled and a forced flush
  // returned, a buffer still out was completed to another client's callback
  // (torch.profiler registering its own while the tracer was active: Kineto
  // then logs "bufferCompleted called with unknown buffer") and would
  // otherwise be lost to the pool for good.
  size_t ReclaimAll();

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t max_buffers() const { return max_buffers_; }
  size_t in_use() const;
  size_t allocated() const;
  uint64_t refused() const;
  uint64_t foreign_releases() const;
  uint64_t reclaimed() const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable base::Mutex mu_;
  std::vector<std::unique_ptr<uint8_t, Free>> owned_ ABSL_GUARDED_BY(mu_);
  std::vector<uint8_t*> free_ ABSL_GUARDED_BY(mu_);
  size_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t foreign_releases_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reclaimed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_ACTIVITY_BUFFER_POOL_H_
