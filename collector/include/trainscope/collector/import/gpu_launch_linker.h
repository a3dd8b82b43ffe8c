// Links device work (kernels, copies, memsets) to the CPU runtime call that
// launched it: by Kineto's args.correlation, else by the flow events
// ("ac2g", "async_cpu_to_gpu") that join a launch's (pid, tid, ts) to its
// kernel's. Fed in time order, a launch always comes before its device work,
// so a bounded map of recent launches suffices: the oldest are forgotten
// past `capacity` (counted), and device work whose launch is unknown is
// still imported, with correlation 0.
//
// Usage:
//   GpuLaunchLinker linker(1 << 20);
//   linker.OnFlow(flow_event);                       // flows, if any
//   uint64_t c = linker.CorrelationOf(launch_event);
//   linker.AddLaunch(c, {.start_ns = launch.ts_ns, .op_name = op});
//   const GpuLaunchLinker::Launch* l = linker.Find(linker.CorrelationOf(kernel_event));
//
// Threading: not thread-safe; one thread.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_GPU_LAUNCH_LINKER_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_GPU_LAUNCH_LINKER_H_

#include <cstdint>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "trainscope/collector/import/trace_event_sorter.h"

namespace trainscope::collector {

class GpuLaunchLinker {
 public:
  // What device work inherits from its launch.
  struct Launch {
    int64_t start_ns = 0;
    uint32_t op_name = 0;  // the innermost CPU operator around the launch (sorter string id)
    uint64_t flops = 0;    // that operator's, for its first kernel only
    // The CPU collective (record_param_comms) around the launch, if any.
    bool collective = false;
    uint32_t group = 0;  // sorter string id
    uint64_t group_sequence = 0;
    uint32_t collective_kind = 0;
    uint64_t bytes = 0;
  };

  explicit GpuLaunchLinker(size_t capacity) : capacity_(capacity) {}

  // A flow event: remembered at its (pid, tid, ts) end.
  void OnFlow(const SortedTraceEvent& flow);
  // args.correlation, else the id of a flow at the event's (pid, tid, ts);
  // 0 when neither.
  uint64_t CorrelationOf(const SortedTraceEvent& e) const;
  void AddLaunch(uint64_t correlation, const Launch& launch);
  // Null when unknown (never seen, or forgotten past the capacity).
  Launch* Find(uint64_t correlation);

  uint64_t launches() const { return launches_; }
  uint64_t forgotten() const { return forgotten_; }
  uint64_t flows() const { return flows_; }

 private:
  const size_t capacity_;
  absl::flat_hash_map<uint64_t, Launch> launches_by_id_;
  std::deque<uint64_t> order_;  // oldest first
  // Per (pid, tid): the latest flow end there, (ts, id).
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::pair<int64_t, uint64_t>> flows_at_;
  uint64_t launches_ = 0;
  uint64_t forgotten_ = 0;
  uint64_t flows_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_GPU_LAUNCH_LINKER_H_
