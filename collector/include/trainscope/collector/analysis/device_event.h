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
  uint32_t detail = 0;  // CollectiveKind, Phase or OperatorScope by kind
};

// Maps a device's clock onto the job's reference clock (ClockAligner).
class ReferenceClock {
 public:
  virtual ~ReferenceClock() = default;
  virtual int64_t ToReference(uint32_t rank, int64_t local_ns) const = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_DEVICE_EVENT_H_
