// This process's memory, read at step boundaries.
//
// Usage:
//   MemoryProbe probe;
//   uint64_t rss = probe.ResidentBytes(), peak = probe.PeakResidentBytes();
//
// Torch 1.13 keeps no statistics for its CPU allocator, so CPU memory is the
// resident set: /proc/self/statm (kept open, one pread per call) and the peak
// from getrusage. CUDA memory comes from torch.cuda on the Python side.
//
// Threading: any thread; pread has no shared offset.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_MEMORY_PROBE_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_MEMORY_PROBE_H_

#include <cstdint>

namespace trainscope::pytorch {

class MemoryProbe {
 public:
  MemoryProbe();
  ~MemoryProbe();
  MemoryProbe(const MemoryProbe&) = delete;
  MemoryProbe& operator=(const MemoryProbe&) = delete;

  uint64_t ResidentBytes() const;      // 0 when /proc is unavailable
  uint64_t PeakResidentBytes() const;  // 0 when getrusage fails

 private:
  int statm_fd_ = -1;
  uint64_t page_bytes_ = 4096;
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_MEMORY_PROBE_H_
