// The viewer's plain data: what the models are fed. Sources (a stored job
// log, the live feed, the synthetic demo) convert protos into these at the
// edge, so the models carry no protobuf or Qt dependency.
//
// Usage:
//   OperatorRecord op{.rank = 3, .start_ns = ..., .end_ns = ..., .name = names.Intern("conv")};
//   marey.AddOperators({op});
//
// Threading: plain values.
#ifndef TRAINSCOPE_VIEWER_RECORDS_H_
#define TRAINSCOPE_VIEWER_RECORDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/operator_coverage.h"

namespace trainscope::viewer {

// Colour classes of the Marey graph (analysis.proto OperatorClass): CPU
// operators, then device work on GPU streams (kernels, NCCL kernels, copies
// and memsets).
enum class OpClass : uint8_t {
  kCompute = 0,
  kCollective = 1,
  kSend = 2,
  kRecv = 3,
  kGpuKernel = 4,
  kGpuCollective = 5,
  kGpuCopy = 6,
};
inline constexpr int kOpClassCount = 7;

// What density bins may merge: compute on a thread or a stream.
inline bool IsMergeable(OpClass c) { return c == OpClass::kCompute || c == OpClass::kGpuKernel; }
inline bool IsCommunication(OpClass c) {
  return c == OpClass::kCollective || c == OpClass::kSend || c == OpClass::kRecv ||
         c == OpClass::kGpuCollective;
}
inline bool IsGpu(OpClass c) {
  return c == OpClass::kGpuKernel || c == OpClass::kGpuCollective || c == OpClass::kGpuCopy;
}

// One operator on one device. Times in ns: aligned on the job's reference
// clock, raw on the device's own clock.
struct OperatorRecord {
  uint32_t rank = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t raw_start_ns = 0;
  int64_t raw_end_ns = 0;
  uint32_t name = 0;  // NameTable id
  OpClass op_class = OpClass::kCompute;
  uint64_t step = 0;
  // Communication only: the group (NameTable id), the per-group (per
  // group and peer for send/recv) sequence and the other rank.
  uint32_t group = 0;
  uint64_t group_sequence = 0;
  int32_t peer = -1;
  uint64_t bytes = 0;
  // GPU work only (IsGpu(op_class)): where it ran.
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
};

// Operators with their names still as strings (a source thread does not
// own the UI's NameTable): `name` and `group` index `strings`.
struct OperatorBatchRecord {
  std::vector<std::string> strings;
  std::vector<OperatorRecord> operators;
};

// A kernel name's share of one device's step (analysis.proto KernelSummary).
struct KernelSummaryRecord {
  std::string name;
  OpClass op_class = OpClass::kGpuKernel;
  uint32_t count = 0;
  int64_t total_ns = 0;
  std::string launch_op;
};

// One device's share of one step (analysis.proto DeviceStep). With has_gpu,
// compute, collective, wait, idle and FLOPs are device time and cpu_* keep
// the host's view.
struct DeviceStepRecord {
  uint32_t rank = 0;
  uint32_t stage = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t step_time_ns = 0;
  int64_t data_wait_ns = 0;  // the step interval
  int64_t forward_ns = 0;
  int64_t backward_ns = 0;
  int64_t optimizer_ns = 0;
  int64_t compute_ns = 0;
  int64_t collective_ns = 0;  // communication duration
  int64_t wait_ns = 0;        // of collective_ns: waiting for the last participant
  int64_t idle_ns = 0;
  uint64_t flops = 0;
  double flops_per_second = 0;
  uint64_t peak_memory_bytes = 0;
  bool complete = true;
  int64_t transfer_ns = 0;  // of collective_ns: the rest after the wait
  // Device time (has_gpu).
  bool has_gpu = false;
  int64_t gpu_busy_ns = 0;  // union of compute kernels over the streams
  int64_t gpu_idle_launch_bound_ns = 0;
  int64_t gpu_idle_host_sync_ns = 0;
  int64_t gpu_idle_data_wait_ns = 0;
  int64_t h2d_copy_ns = 0;
  int64_t d2h_copy_ns = 0;
  int64_t other_copy_ns = 0;
  int64_t comm_compute_overlap_ns = 0;
  uint32_t kernels = 0;
  uint32_t gpu_streams = 0;
  int64_t cpu_compute_ns = 0;
  int64_t cpu_collective_ns = 0;
  std::vector<KernelSummaryRecord> top_kernels;  // by total time

  int64_t copy_ns() const { return h2d_copy_ns + d2h_copy_ns + other_copy_ns; }
};

// Where a pair's two ends live (analysis.proto LinkLocality).
enum class LinkLocality : uint8_t { kUnknown = 0, kSameDevice = 1, kSameHost = 2, kCrossHost = 3 };

// What one device sent another in one step and process group
// (analysis.proto PairTraffic; docs/traffic.md).
struct PairTrafficRecord {
  uint64_t step = 0;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  std::string group;
  bool exact = false;  // send/recv: counted, not modelled
  uint64_t bytes = 0;
  uint32_t messages = 0;
  int64_t duration_ns = 0;  // the receiver's transfer time
  LinkLocality locality = LinkLocality::kUnknown;
  std::string src_host;
  std::string dst_host;
};

// A step closed on every live device.
struct StepRecord {
  uint64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::vector<DeviceStepRecord> devices;
  std::vector<PairTrafficRecord> traffic;
};

// A device of the job and where it sits (for vertical aggregation).
struct DeviceInfo {
  uint32_t rank = 0;
  uint32_t stage = 0;
  std::string host;
  std::string rack = "";  // empty: unknown (the viewer's --topology file may name it)
};

// A rule's finding (issue 6). Names job, step, device(s), operator, metric,
// value, baseline and rule.
// kRaised: the rule's condition holds (the alert is open); kCleared: it no
// longer does (a clear repeats its raise's alert_id).
enum class AlertState : uint8_t { kRaised, kCleared };

struct Alert {
  std::string job;
  uint64_t alert_id = 0;  // per job, from 1; 0: unknown (each alert stands alone)
  AlertState state = AlertState::kRaised;
  uint64_t step = 0;             // the step whose close raised or cleared it
  uint64_t onset_step = 0;       // where the cause began, <= step; 0: unknown
  int64_t changed_unix_ns = 0;   // collector time of this state change; 0: unknown
  uint64_t caused_by_alert_id = 0;  // an effect of that open alert; 0: a cause
  std::vector<uint32_t> ranks;  // the cause first, then the others involved
  int64_t cause = -1;           // the rank the rule blames; -1: none (job-wide)
  std::string op;               // operator name; empty when the rule is not about one
  std::string metric;
  double value = 0;
  double baseline = 0;
  std::string rule;
  std::string text;              // one human sentence
  std::optional<uint64_t> item;  // difficult_item: the training item
};

// One rank of a job as the collector reports it.
struct RankRecord {
  uint32_t rank = 0;
  std::string host;
  uint32_t pid = 0;
  bool connected = false;
  uint64_t events_received = 0;
  std::string rack = "";  // Hello.rack; empty: unknown
};

// kLost: no rank connected and one ended without goodbye (JOB_STATE_LOST).
enum class JobStateKind : uint8_t { kUnknown, kRunning, kIdle, kFinished, kHalted, kLost };

struct JobRecord {
  std::string job_id;
  JobStateKind state = JobStateKind::kUnknown;
  uint32_t world_size = 0;
  uint32_t ranks_connected = 0;
  bool recording = false;
  std::optional<bool> loss_contribution;  // as last switched by the collector; unset: never
  double events_per_second = 0;
  uint64_t events_received = 0;
  std::vector<RankRecord> ranks;
};

// --- Loss contribution (loss.proto; Lee, "Loss-contribution-based in situ
// visualization for neural network training"). Maps arrive as half floats;
// the sources decode them (DecodeHalfs) so these hold plain floats.

// A small input image, row-major, channels last.
struct ThumbnailRecord {
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t channels = 0;  // 1 (grey) or 3 (RGB)
  std::vector<uint8_t> pixels;
  bool valid() const {
    return height > 0 && width > 0 && (channels == 1 || channels == 3) &&
           pixels.size() == size_t{height} * width * channels;
  }
};

// One epoch's score of an item in the job-wide list.
struct EpochScoreRecord {
  uint32_t epoch = 0;
  double contribution = 0;
  uint32_t position = 0;  // 1-based place in that epoch's top-N; 0: not in it
};

// An item of the job-wide top-N "difficult items".
struct DifficultItemRecord {
  uint64_t item = 0;
  double contribution = 0;  // in the current epoch
  int32_t label = -1;       // -1: unknown
  int32_t prediction = -1;  // -1: unknown
  uint32_t rank = 0;        // the rank that measured it
  uint32_t epochs_in_top = 0;
  std::vector<EpochScoreRecord> history;  // oldest first
  ThumbnailRecord input;
  uint32_t snapshots = 0;  // snapshots the collector keeps for it
};

// The job-wide list of the current epoch.
struct LossStateRecord {
  uint32_t epoch = 0;
  uint64_t iteration = 0;
  uint32_t top_n = 0;
  std::string selection_layer;
  std::vector<std::string> monitored_layers;
  std::vector<DifficultItemRecord> items;
  std::optional<uint32_t> last_complete_epoch;
};

// One monitored layer's maps for one item, decoded. A map whose bytes did not
// match height * width halves is left empty (shown as missing, not guessed).
struct LayerMapRecord {
  std::string layer;
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<float> contribution;  // C_h(x,y) >= 0, row-major
  std::vector<float> reduction;     // R_h(x,y) >= 0, row-major
};

// One selected item as seen in one iteration.
struct ItemSnapshotRecord {
  uint64_t item = 0;
  uint32_t epoch = 0;
  uint64_t iteration = 0;
  int32_t label = -1;
  int32_t prediction = -1;
  double contribution = 0;
  ThumbnailRecord input;
  std::vector<LayerMapRecord> maps;  // one per monitored layer
  uint32_t rank = 0;
};

// What a source fetched of a job's loss contribution.
struct LossData {
  std::optional<LossStateRecord> state;  // nullopt: the source said nothing about it
  // Each fetched item's snapshots, oldest first. An item present with no
  // snapshots was asked for and has none.
  std::map<uint64_t, std::vector<ItemSnapshotRecord>> snapshots;
};

// Everything the views show of one job, as loaded from one source.
struct JobData {
  JobRecord job;
  std::vector<DeviceInfo> devices;
  std::vector<StepRecord> steps;
  OperatorBatchRecord operators;
  std::vector<Alert> alerts;
  LossData loss;
  // A stored job: which operators --max-operators let in (cut(): a notice).
  OperatorCoverage coverage;
};

const char* JobStateName(JobStateKind state);
const char* OpClassName(OpClass op_class);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_RECORDS_H_
