// The collectives whose kernels are in flight: the collective hook registers
// each launch (group, sequence, bytes) and pushes the id it gets as a CUPTI
// external correlation, so the NCCL kernel's record can be tied back to it.
//
// Usage:
//   CollectiveLaunchTable table(4096);
//   training thread: uint64_t id = table.Register(launch);  push id (CUSTOM1) ... pop
//   converter:       std::optional<GpuCollectiveLaunch> c = table.Lookup(id);
//
// Bounded: a fixed ring of slots; a launch is forgotten once `slots` newer
// ones were registered (Lookup then says nullopt, and the kernel is still
// recorded, without its group and sequence).
//
// Threading: thread-safe (one mutex; collectives are a few per step).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_COLLECTIVE_LAUNCH_TABLE_H_
#define TRAINSCOPE_AGENT_SRC_GPU_COLLECTIVE_LAUNCH_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "trainscope/agent/event_record.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

struct GpuCollectiveLaunch {
  StringId name = kEmptyString;
  CollectiveKind kind = CollectiveKind::kUnspecified;
  StringId group = kEmptyString;
  uint64_t group_sequence = 0;
  uint64_t bytes = 0;
  int32_t peer = -1;
};

class CollectiveLaunchTable {
 public:
  explicit CollectiveLaunchTable(size_t slots);

  // Returns the launch's id: 1, 2, 3, ...
  uint64_t Register(const GpuCollectiveLaunch& launch);
  std::optional<GpuCollectiveLaunch> Lookup(uint64_t id) const;

 private:
  struct Slot {
    uint64_t id = 0;
    GpuCollectiveLaunch launch;
  };
  mutable base::Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_COLLECTIVE_LAUNCH_TABLE_H_
