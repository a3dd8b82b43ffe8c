// Turns one trace file's events, in time order (TraceEventSorter), into
// trainscope events, the same a live agent sends:
//   - CPU operators (cpu_op, user_annotation, legacy events): OPERATOR;
//     "ProfilerStep#N" (or an export's "step" arg, or the StepFinder's
//     starts when the file has neither): STEP_MARK.
//   - Collectives, each once: Kineto's record_param_comms is the host's
//     view of a collective (COLLECTIVE on its thread), its kind from its
//     "Collective name" or, when it has none (trace_filter), from the c10d
//     work it encloses ("nccl:all_reduce"); that inner range is then an
//     operator. A record_param_comms that encloses no collective ("wait") is
//     an operator. A "<backend>:<op>" range outside any record_param_comms
//     (older torch, the legacy profiler) is the collective itself.
//   - Device work on the device's stream (thread 0, gpu_device/gpu_stream):
//     kernel -> GPU_KERNEL (value: its launching operator's FLOPs, first
//     kernel only), NCCL/RCCL kernel -> GPU_COLLECTIVE with the group,
//     sequence, kind and bytes of the record_param_comms that launched it
//     (else its own args and name, counted in a sequence of its own),
//     gpu_memcpy -> GPU_MEMCPY (CopyKind, bytes), gpu_memset -> GPU_MEMSET.
//     Each links to its launch (GpuLaunchLinker): correlation, launch time,
//     launching operator; unknown launch: correlation 0, counted.
//   - cuda_runtime/cuda_driver (and HIP's) calls: GPU_RUNTIME on the CPU
//     thread, value the correlation, detail the RuntimeCall.
//   - Skipped and counted: gpu_user_annotation ranges (a copy, on the
//     device's row, of CPU annotations the CPU thread already has: the
//     model has no annotation track for a device), cuda_sync records (the
//     CPU's Synchronize call carries the wait), the profiler's own span.
//
// Events go to the sink in the order they end (per thread and per stream the
// order a live agent records them in), not in the order they start.
//
// Usage:
//   TraceEventMapper mapper(&sorter, {.step_starts_ns = found.starts_ns}, sink);
//   while (const SortedTraceEvent* e = sorter.Next()) RETURN_IF_ERROR(mapper.Map(*e));
//   RETURN_IF_ERROR(mapper.Finish());
//
// Threading: not thread-safe; one thread.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_TRACE_EVENT_MAPPER_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_TRACE_EVENT_MAPPER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/import/gpu_launch_linker.h"
#include "trainscope/collector/import/kineto_names.h"
#include "trainscope/collector/import/trace_event_sorter.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

// One event for a batch; names point into the sorter's table (or literals).
struct MappedEvent {
  v1::EventKind kind = v1::EVENT_KIND_UNSPECIFIED;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  absl::string_view name;
  uint32_t thread = 0;
  uint32_t detail = 0;
  uint64_t value = 0;
  // Collective columns (COLLECTIVE, GPU_COLLECTIVE).
  absl::string_view group;
  uint64_t group_sequence = 0;
  // GPU columns (GPU_KERNEL .. GPU_COLLECTIVE).
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
  uint64_t gpu_correlation = 0;
  int64_t gpu_launch_delta_ns = 0;
  absl::string_view gpu_launch_op;
};

struct TraceMappingStats {
  uint64_t events = 0;  // complete events mapped or skipped (flows not counted)
  uint64_t operators = 0;
  uint64_t collectives = 0;  // CPU collectives
  uint64_t steps = 0;        // step marks
  uint64_t kernels = 0;      // compute kernels
  uint64_t nccl_kernels = 0;
  uint64_t nccl_joined = 0;  // NCCL kernels joined to their record_param_comms
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t runtime_calls = 0;
  uint64_t gpu_linked = 0;    // device events whose launch was found
  uint64_t gpu_unlinked = 0;  // ... not found: correlation 0
  uint64_t launches_forgotten = 0;
  uint64_t flows = 0;
  uint64_t gpu_annotations_skipped = 0;
  uint64_t gpu_syncs_skipped = 0;
  uint64_t profiler_spans_skipped = 0;

  void Add(const TraceMappingStats& o);
};

struct TraceEventMapperOptions {
  // Step starts to mark (StepFinder's) when the file has no marks of its own,
  // on `step_thread`.
  std::vector<int64_t> step_starts_ns;
  int64_t step_thread = 0;
  // Launches waiting for their device work: the GPU runs at most some
  // thousands of launches behind the CPU (CUDA queues ~1 k per stream).
  size_t launch_capacity = size_t{1} << 16;
};

class TraceEventMapper {
 public:
  using Sink = std::function<absl::Status(const MappedEvent&)>;
  TraceEventMapper(TraceEventSorter* strings, TraceEventMapperOptions options, Sink sink);

  absl::Status Map(const SortedTraceEvent& e);
  // Emits what is still held (collectives whose kind was pending).
  absl::Status Finish();

  TraceMappingStats stats() const;

 private:
  struct Collective {
    uint32_t group = 0;  // string id
    uint64_t sequence = 0;
    v1::CollectiveKind kind = v1::COLLECTIVE_KIND_UNSPECIFIED;
    uint64_t bytes = 0;
  };
  // An open CPU operator on a thread.
  struct Frame {
    int64_t end_ns = 0;
    uint32_t name = 0;
    uint64_t flops = 0;
    bool is_param_comms = false;
    std::optional<Collective> collective;
    // A record_param_comms whose kind is not known yet: emitted when known.
    std::optional<SortedTraceEvent> pending;
    // ... and the launches made inside it while pending.
    std::vector<uint64_t> launched;
  };
  // A record_param_comms that ended with neither a collective name nor c10d
  // work inside but launched device work: a collective if that work is an
  // NCCL kernel (its kind from the kernel's name), else an operator.
  struct AwaitingKernel {
    SortedTraceEvent record;
    std::vector<uint64_t> launched;
    bool done = false;
  };

  absl::Status MapCpu(const SortedTraceEvent& e);
  absl::Status MapRuntime(const SortedTraceEvent& e);
  absl::Status MapDevice(const SortedTraceEvent& e, KinetoCategory cat);
  // Closes the thread's frames that ended by `at_ns`.
  absl::Status PopEnded(int64_t tid, int64_t at_ns);
  absl::Status Close(Frame& frame);
  // Decides an awaiting record_param_comms on its first device work.
  absl::Status ResolveAwaiting(uint64_t correlation, absl::string_view kernel, bool nccl,
                               GpuLaunchLinker::Launch* launch);
  // Emits it as a collective of `nccl_kind` (joining `launch`), or as an operator.
  absl::Status Decide(AwaitingKernel& a, std::optional<v1::CollectiveKind> nccl_kind,
                      GpuLaunchLinker::Launch* launch);
  // Those waiting past kMaxAwaitNs at `now_ns` become operators.
  absl::Status ExpireAwaiting(int64_t now_ns);
  // Queues an event; Release hands the sink those that ended by `up_to_ns`.
  absl::Status Emit(const MappedEvent& m);
  absl::Status Release(int64_t up_to_ns);
  absl::Status EmitStepMarksUpTo(int64_t at_ns);
  absl::Status EmitOperator(const SortedTraceEvent& e);
  // Emits `e` as the CPU collective of `kind`, named `name`.
  absl::StatusOr<Collective> EmitCollective(const SortedTraceEvent& e, v1::CollectiveKind kind,
                                            absl::string_view name);
  KinetoCategory Category(uint32_t cat);
  uint64_t Bytes(const SortedTraceEvent& e) const;

  TraceEventSorter* const strings_;
  const TraceEventMapperOptions options_;
  const Sink sink_;
  GpuLaunchLinker linker_;
  absl::flat_hash_map<int64_t, std::vector<Frame>> stacks_;
  absl::flat_hash_map<uint32_t, KinetoCategory> categories_;
  absl::flat_hash_map<uint32_t, uint64_t> cpu_sequences_;  // per group
  absl::flat_hash_map<uint32_t, uint64_t> gpu_sequences_;  // NCCL kernels without a CPU record
  // Events wait here until the time they ended has passed: the sink gets
  // them in end order per thread and stream, as a live agent records them
  // (the collector's validator requires it).
  struct Held {
    int64_t end_ns;
    uint64_t seq;
    MappedEvent event;
    bool operator>(const Held& o) const {
      return end_ns != o.end_ns ? end_ns > o.end_ns : seq > o.seq;
    }
  };
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> held_;
  uint64_t held_seq_ = 0;
  std::multiset<int64_t> awaiting_ends_;  // ends of the undecided awaiting records
  std::deque<AwaitingKernel> awaiting_;   // oldest first, bounded
  absl::flat_hash_map<uint64_t, size_t> awaiting_by_launch_;  // correlation -> index + offset
  size_t awaiting_offset_ = 0;                                // awaiting_ entries popped
  std::optional<uint64_t> step_;                              // the latest step marked
  size_t next_found_step_ = 0;
  uint32_t default_group_ = 0;
  uint32_t param_comms_ = 0;
  TraceMappingStats stats_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_TRACE_EVENT_MAPPER_H_
