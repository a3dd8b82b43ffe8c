// The fixed-size record the hot path writes into a thread's ring.
//
// Usage: callers normally use the Agent::Record* helpers, which fill an
// EventRecord; Agent::Record(const EventRecord&) takes one directly.
//
// The enums mirror trainscope.v1 (agent.proto) value for value, so the sender
// copies them onto the wire without a table; agent.cc static_asserts that.
// The thread is known per ring, so it is not stored per record.
#ifndef TRAINSCOPE_AGENT_EVENT_RECORD_H_
#define TRAINSCOPE_AGENT_EVENT_RECORD_H_

#include <cstdint>
#include <type_traits>

namespace trainscope::agent {

// An interned string (Agent::Intern). 0 is the empty string.
using StringId = uint32_t;
inline constexpr StringId kEmptyString = 0;

// Mirrors trainscope.v1.EventKind.
enum class EventKind : uint8_t {
  kUnspecified = 0,
  kOperator = 1,       // start..end; value = op sequence number
  kOperatorBegin = 2,  // start only; value = op sequence number
  kOperatorEnd = 3,    // start is the end time; value = op sequence number
  kCollective = 4,     // start..end; value = bytes; detail = CollectiveKind
  kStepMark = 5,       // instant; value = step number that starts here
  kPhaseMark = 6,      // start..end; value = step number; detail = Phase
  kCounter = 7,        // instant; value = counter value; name = counter name
  // Device activity (GpuEventRecord; see agent.proto for the GPU columns).
  kGpuKernel = 8,       // value = FLOPs (0 when unknown); name = kernel name
  kGpuMemcpy = 9,       // value = bytes; detail = CopyKind
  kGpuMemset = 10,      // value = bytes
  kGpuCollective = 11,  // NCCL kernel; value = bytes; detail = CollectiveKind; group/aux/peer
  kGpuRuntime = 12,     // on a CPU thread; value = correlation id; detail = RuntimeCall
  // Ring only, never on the wire: an operator whose start_ns / end_ns hold raw
  // ticks of the agent's tick clock (Agent::SetTickMapper), written by a hook
  // straight into its thread's ring (trainscope_raw_ring_push_operator). The
  // sender maps the ticks to ns and sends it as kOperator.
  kOperatorTicks = 64,
};

// Mirrors trainscope.v1.CopyKind (detail of kGpuMemcpy).
enum class CopyKind : uint16_t {
  kUnspecified = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
  kPeerToPeer = 4,
  kHostToHost = 5,
};

// Mirrors trainscope.v1.RuntimeCall (detail of kGpuRuntime).
enum class RuntimeCall : uint16_t {
  kOther = 0,
  kLaunch = 1,
  kCopy = 2,
  kSync = 3,
};

// Mirrors trainscope.v1.CollectiveKind.
enum class CollectiveKind : uint16_t {
  kUnspecified = 0,
  kAllReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kBroadcast = 4,
  kBarrier = 5,
  kSend = 6,
  kRecv = 7,
  kAllToAll = 8,
  kReduce = 9,
  kGather = 10,
  kScatter = 11,
};

// Mirrors trainscope.v1.Phase.
enum class Phase : uint16_t {
  kUnspecified = 0,
  kDataWait = 1,
  kForward = 2,
  kBackward = 3,
  kOptimizer = 4,
};

// Mirrors trainscope.v1.OperatorScope.
enum class OperatorScope : uint16_t {
  kUnspecified = 0,
  kForward = 1,
  kBackward = 2,
};

// One event, 48 bytes, trivially copyable. Instants have end_ns == start_ns.
struct EventRecord {
  int64_t start_ns = 0;  // primary clock (CLOCK_MONOTONIC), see Agent::Now()
  int64_t end_ns = 0;    // == start_ns for instants
  uint64_t value = 0;    // meaning by kind (see EventKind)
  uint64_t aux = 0;      // collective: group sequence number
  StringId name = 0;     // operator / collective / counter name
  StringId group = 0;    // collective: process group name
  int32_t peer = -1;     // collective: peer rank, -1 when none
  EventKind kind = EventKind::kUnspecified;
  uint8_t reserved = 0;
  uint16_t detail = 0;  // CollectiveKind, Phase or OperatorScope by kind
};

static_assert(sizeof(EventRecord) == 48, "EventRecord must stay 48 bytes (ring slot size)");
static_assert(std::is_trivially_copyable_v<EventRecord>);
static_assert(std::is_standard_layout_v<EventRecord>);

// One device-activity event: the common record (kind kGpu*, times on the
// agent's clock) plus the GPU columns of agent.proto's EventBatch. Produced
// by the GPU activity tracer, not by training threads, so it travels in its
// own queue rather than in a thread ring (whose slot size it would double).
struct GpuEventRecord {
  EventRecord event;
  uint32_t device = 0;          // gpu_device
  uint32_t stream = 0;          // gpu_stream
  uint64_t correlation = 0;     // gpu_correlation; 0: launch unknown
  int64_t launch_delta_ns = 0;  // launching call's start minus event.start_ns (<= 0)
  StringId launch_op = 0;       // the launching operator's name
  uint32_t thread = 0;          // kGpuRuntime: the calling OS thread; else 0
};
static_assert(std::is_trivially_copyable_v<GpuEventRecord>);

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_EVENT_RECORD_H_
