// Hand-built DeviceEvents and a fixed-offset ReferenceClock for the step
// assembly and Marey tests.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_EVENTS_H_
#define TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_EVENTS_H_

#include <cstdint>
#include <map>

#include "trainscope/collector/analysis/device_event.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector::testing {

// reference = local + offset(rank); 0 for ranks without one.
class FixedOffsetClock : public ReferenceClock {
 public:
  void set_offset(uint32_t rank, int64_t offset_ns) { offsets_[rank] = offset_ns; }
  int64_t offset(uint32_t rank) const {
    auto it = offsets_.find(rank);
    return it == offsets_.end() ? 0 : it->second;
  }
  int64_t ToReference(uint32_t rank, int64_t local_ns) const override {
    return local_ns + offset(rank);
  }
  // The local time of `rank` that maps to `reference_ns`.
  int64_t ToLocal(uint32_t rank, int64_t reference_ns) const { return reference_ns - offset(rank); }

 private:
  std::map<uint32_t, int64_t> offsets_;
};

inline DeviceEvent Op(uint32_t name, int64_t start, int64_t end, uint32_t thread = 1,
                      uint32_t scope = trainscope::v1::OPERATOR_SCOPE_FORWARD, uint64_t seq = 0) {
  DeviceEvent e;
  e.kind = trainscope::v1::EVENT_KIND_OPERATOR;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.thread = thread;
  e.detail = scope;
  e.value = seq;
  return e;
}

inline DeviceEvent Mark(uint64_t step, int64_t at) {
  DeviceEvent e;
  e.kind = trainscope::v1::EVENT_KIND_STEP_MARK;
  e.start_ns = e.end_ns = at;
  e.value = step;
  return e;
}

inline DeviceEvent PhaseMark(trainscope::v1::Phase phase, uint64_t step, int64_t start,
                             int64_t end) {
  DeviceEvent e;
  e.kind = trainscope::v1::EVENT_KIND_PHASE_MARK;
  e.detail = phase;
  e.value = step;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

inline DeviceEvent Counter(uint32_t name, uint64_t value, int64_t at, uint32_t thread = 1) {
  DeviceEvent e;
  e.kind = trainscope::v1::EVENT_KIND_COUNTER;
  e.name = name;
  e.value = value;
  e.start_ns = e.end_ns = at;
  e.thread = thread;
  return e;
}

inline DeviceEvent Collective(trainscope::v1::CollectiveKind kind, uint32_t name, uint32_t group,
                              uint64_t seq, int64_t start, int64_t end, uint64_t bytes,
                              int32_t peer = -1) {
  DeviceEvent e;
  e.kind = trainscope::v1::EVENT_KIND_COLLECTIVE;
  e.detail = kind;
  e.name = name;
  e.group = group;
  e.group_sequence = seq;
  e.start_ns = start;
  e.end_ns = end;
  e.value = bytes;
  e.peer = peer;
  e.thread = 1;
  return e;
}

// GPU work of `kind` on (device, stream), launched at `launch` (device
// clock) by correlation `correlation` (0: an unknown launch).
inline DeviceEvent Gpu(trainscope::v1::EventKind kind, uint32_t name, uint32_t stream,
                       int64_t start, int64_t end, uint64_t correlation, int64_t launch,
                       uint32_t launch_op = 0, uint64_t value = 0, uint32_t detail = 0) {
  DeviceEvent e;
  e.kind = kind;
  e.name = name;
  e.gpu_device = 0;
  e.gpu_stream = stream;
  e.start_ns = start;
  e.end_ns = end;
  e.correlation = correlation;
  e.launch_ns = correlation != 0 ? launch : 0;
  e.launch_op = launch_op;
  e.value = value;
  e.detail = detail;
  return e;
}

// An NCCL kernel of instance (group, seq).
inline DeviceEvent NcclKernel(uint32_t name, uint32_t group, uint64_t seq, uint32_t stream,
                              int64_t start, int64_t end, uint64_t correlation, int64_t launch,
                              uint64_t bytes = 0) {
  DeviceEvent e = Gpu(trainscope::v1::EVENT_KIND_GPU_COLLECTIVE, name, stream, start, end,
                      correlation, launch, 0, bytes, trainscope::v1::COLLECTIVE_KIND_ALL_REDUCE);
  e.group = group;
  e.group_sequence = seq;
  return e;
}

// A host runtime call (GPU_RUNTIME) of `call` on `thread`.
inline DeviceEvent RuntimeCall(trainscope::v1::RuntimeCall call, int64_t start, int64_t end,
                               uint32_t thread = 1) {
  DeviceEvent e;
  e.kind = trainscope::v1::EVENT_KIND_GPU_RUNTIME;
  e.detail = call;
  e.start_ns = start;
  e.end_ns = end;
  e.thread = thread;
  return e;
}

}  // namespace trainscope::collector::testing

#endif  // TRAINSCOPE_TESTS_COLLECTOR_ANALYSIS_SYNTHETIC_EVENTS_H_
