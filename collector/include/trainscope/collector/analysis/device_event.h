// One event of one device as the analysis sees it: decoded from an
// EventBatch, names interned job-wide (JobStrings), still on the device's
// own clock.
//
// Usage:
//   DeviceEvent e = ...;  // JobAnalyzer decodes them from batches
//   aligner.Add(rank, e); assembler.Add(rank, e);
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_EVENT_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_EVENT_H_

#include <cstdint>

#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

struct DeviceEvent {
  int64_t start_ns = 0;  // device clock; instants have end_ns == start_ns
  int64_t end_ns = 0;
  uint64_t value = 0;           // meaning by kind (agent.proto EventKind)
  uint64_t group_sequence = 0;  // collectives: per group (per group and peer for p2p)
  uint32_t name = 0;            // JobStrings id
  uint32_t group = 0;           // JobStrings id of the process group; 0: none
  uint32_t thread = 0;
  int32_t peer = -1;  // send/recv: the other rank
  trainscope::v1::EventKind kind = trainscope::v1::EVENT_KIND_UNSPECIFIED;
  uint32_t detail = 0;  // CollectiveKind, Phase, OperatorScope, CopyKind or RuntimeCall by kind
  // GPU events (kind GPU_KERNEL .. GPU_COLLECTIVE) only.
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
  uint32_t launch_op = 0;    // JobStrings id of the launching operator; 0: unknown
  uint64_t correlation = 0;  // 0: the launch is unknown
  int64_t launch_ns = 0;     // device clock: when the launch ran on the CPU (correlation != 0)

  bool IsGpu() const {
    return kind >= trainscope::v1::EVENT_KIND_GPU_KERNEL &&
           kind <= trainscope::v1::EVENT_KIND_GPU_COLLECTIVE;
  }
  bool IsCollective() const {
    return kind == trainscope::v1::EVENT_KIND_COLLECTIVE ||
           kind == trainscope::v1::EVENT_KIND_GPU_COLLECTIVE;
  }
};

// Maps a device's clock onto the job's reference clock (ClockAligner).
class ReferenceClock {
 public:
  virtual ~ReferenceClock() = default;
  virtual int64_t ToReference(uint32_t rank, int64_t local_ns) const = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_EVENT_H_
