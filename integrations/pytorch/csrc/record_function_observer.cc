#include "record_function_observer.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <time.h>
#include <x86intrin.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>

#include "collective_tag.h"
#include "op_name_cache.h"
#include "trainscope/ops/flop_formulas.h"

namespace trainscope::pytorch {
namespace {

using ops::AddmmFlops;
using ops::BmmFlops;
using ops::ConvGeometry;
using ops::ConvolutionFlops;
using ops::Dims;
using ops::LinearFlops;
using ops::MatmulFlops;
using ops::MmFlops;

constexpr uint32_t kMaxDepth = 128;  // deeper ranges are not timed

// One operator in progress on this thread.
struct Frame {
  const at::RecordFunction* rf;
  const trainscope_op_info* info;
  uint64_t start_ticks;
  uint64_t aux;         // FLOPs of a FLOP operator; the running step of an optimizer range
  bool gpu_pushed;      // bracketed for CUPTI (trainscope_observer_gpu_operator_begin)
  bool opens_backward;  // counted in backward_depth (saves OnExit a RecordFunction call)
  // Not a plain operator (optimizer range, FLOPs to count): OnExit takes the
  // general path (ExitGeneral) instead of a raw record. A CUPTI bracket alone
  // does not: the operator still goes into the ring as a raw record.
  bool general;
};

// Everything the hot path touches on one thread, allocated on its first
// operator. Trivially constructible: zero means empty.
struct ThreadState {
  uint64_t generation;
  // This thread's ring in the session's agent: OnExit writes a raw record
  // into it without a call (null: the general path, which counts the drop).
  const trainscope_raw_ring* ring;
  uint32_t depth;           // frames pushed, may exceed kMaxDepth
  uint32_t backward_depth;  // open backward ranges
  uint32_t flop_depth;      // open FLOP operators
  OpNameCache names;        // name -> the session's entry
  Frame frames[kMaxDepth];
};

// What the callbacks record into: the session's observer (the C API of
// libtrainscope_agent.so) and what is fixed for it, read once at install.
struct Targets {
  const trainscope_observer* observer;
  trainscope_phase_ticks* phases;  // the derived phases, updated in place
  uint64_t generation;
  bool uses_tsc;
  bool gpu;  // bracket operators so their kernels name them
};

// The callbacks are plain function pointers: they find their session here.
std::atomic<const Targets*> g_targets{nullptr};
std::atomic<bool> g_installed{false};

// Initial-exec: a dlopen'ed module's default TLS model costs a __tls_get_addr
// call per access; one pointer fits in the static TLS surplus.
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_exiting __attribute__((tls_model("initial-exec"))) = false;

// Frees a thread's state when the thread exits.
struct ThreadStateOwner {
  ThreadState* state = nullptr;
  ~ThreadStateOwner() {
    t_exiting = true;
    t_state = nullptr;
    delete state;
  }
};

// First operator of a thread, or the first under a new session: (re)start.
__attribute__((noinline)) ThreadState* ResetThreadState(const Targets* targets) {
  if (t_exiting) return nullptr;
  // First: the agent's thread-local ring holder is then made before the
  // owner below and destroyed after it, so the ring outlives every use of
  // ts->ring on this thread (the owner clears t_state first).
  const trainscope_raw_ring* ring = trainscope_observer_thread_ring(targets->observer);
  ThreadState* ts = t_state;
  if (ts == nullptr) {
    ts = new (std::nothrow) ThreadState();
    if (ts == nullptr) return nullptr;
    thread_local ThreadStateOwner owner;
    owner.state = ts;
    t_state = ts;
  } else {
    std::memset(static_cast<void*>(ts), 0, sizeof(ThreadState));
  }
  ts->generation = targets->generation;
  ts->ring = ring;
  return ts;
}

// The session's clock: TSC ticks where the session chose the TSC, else
// CLOCK_MONOTONIC ns (trainscope_now_ns's clock, read here without a call).
// The calls are kept off the callbacks' hot paths (noinline helpers): a
// callback without a call saves no registers.
__attribute__((noinline)) uint64_t MonotonicTicks() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t Ticks(const Targets* t) {
  if (t->uses_tsc) [[likely]]
    return __rdtsc();
  return MonotonicTicks();
}

inline bool Has(const trainscope_op_info* info, uint32_t flag) { return (info->flags & flag) != 0; }

const trainscope_op_info* Resolve(const void* observer, const char* name, size_t length) {
  return trainscope_observer_find_op(static_cast<const trainscope_observer*>(observer), name,
                                     length);
}

inline const trainscope_op_info* Lookup(ThreadState* ts, const Targets* t, const char* name) {
  return ts->names.Find(name, &Resolve, t->observer);
}

inline bool OpensBackward(const at::RecordFunction& rf, const trainscope_op_info* info) {
  return Has(info, TRAINSCOPE_OP_OPENS_BACKWARD) ||
         rf.scope() == at::RecordScope::BACKWARD_FUNCTION;
}

inline uint64_t SequenceValue(const at::RecordFunction& rf) {
  const int64_t seq = rf.seqNr();
  return seq >= 0 ? static_cast<uint64_t>(seq) + 1 : 0;
}

// ---- collectives and other async ranges ------------------------------------

// Collectives whose range has started and not yet ended (their context is
// alive): detaching waits for them, so that a collective that finished its
// work but not yet its range (gloo's worker ends it after completing the
// future the training thread waits on) is not cut off at a job's end.
std::atomic<int> g_open_collectives{0};

// Start of a range that may end on another thread (c10d work items).
struct AsyncContext final : at::ObserverContext {
  ~AsyncContext() override {
    if (counted) g_open_collectives.fetch_sub(1, std::memory_order_acq_rel);
  }
  bool counted = false;
  uint64_t generation = 0;
  const trainscope_op_info* info = nullptr;
  uint64_t start_ticks = 0;
  uint64_t bytes = 0;
  uint64_t group_sequence = 0;
  trainscope_collective_tag tag{0, -1};
  bool backward = false;
  const void* gpu_thread = nullptr;  // the thread that began a GPU collective level
};

// Tells threads apart for the GPU collective bracket (its CUPTI level is per thread).
thread_local char t_thread_marker __attribute__((tls_model("initial-exec")));

uint64_t TensorBytes(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    return tensor.defined() ? static_cast<uint64_t>(tensor.nbytes()) : 0;
  }
  if (value.isTensorList()) {
    uint64_t bytes = 0;
    for (const at::Tensor& tensor : value.toTensorList().vec()) {
      if (tensor.defined()) bytes += static_cast<uint64_t>(tensor.nbytes());
    }
    return bytes;
  }
  return 0;
}

__attribute__((noinline)) std::unique_ptr<at::ObserverContext> EnterAsync(
    const at::RecordFunction& rf, const Targets* t, ThreadState* ts,
    const trainscope_op_info* info) {
  auto context = std::make_unique<AsyncContext>();
  context->generation = t->generation;
  context->info = info;
  context->backward = ts->backward_depth > 0;
  if (Has(info, TRAINSCOPE_OP_COLLECTIVE)) {
    context->counted = true;
    g_open_collectives.fetch_add(1, std::memory_order_acq_rel);
    // c10d hands its work item the input tensors even without needsInputs.
    for (const c10::IValue& input : rf.inputs()) context->bytes += TensorBytes(input);
    const bool p2p = Has(info, TRAINSCOPE_OP_POINT_TO_POINT);
    context->tag = CurrentCollectiveTag(t->observer);
    if (!p2p) context->tag.peer = -1;
    context->group_sequence = trainscope_observer_next_sequence(t->observer, context->tag.group,
                                                                context->tag.peer, p2p ? 1 : 0);
    if (t->gpu) {  // NCCL launches its kernels before this range ends, on this thread
      context->gpu_thread = &t_thread_marker;
      trainscope_observer_gpu_collective_begin(t->observer, info, context->tag,
                                               context->group_sequence, context->bytes);
    }
  }
  context->start_ticks = Ticks(t);
  return context;
}

__attribute__((noinline)) void ExitAsync(const at::RecordFunction& rf, const AsyncContext& c) {
  const Targets* t = g_targets.load(std::memory_order_acquire);
  if (t == nullptr || t->generation != c.generation) return;
  const uint64_t end_ticks = Ticks(t);
  if (c.gpu_thread == &t_thread_marker) trainscope_observer_gpu_collective_end(t->observer);
  if (Has(c.info, TRAINSCOPE_OP_COLLECTIVE)) {
    trainscope_observer_collective(t->observer, c.info, c.tag, c.group_sequence, c.bytes,
                                   c.start_ticks, end_ticks);
  } else {
    trainscope_observer_async_operator(t->observer, c.info, c.start_ticks, end_ticks,
                                       SequenceValue(rf), c.backward ? 1 : 0);
  }
}

// ---- FLOPs -------------------------------------------------------------------

Dims SizesOf(c10::ArrayRef<const c10::IValue> inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].isTensor()) return {};
  const at::Tensor& tensor = inputs[i].toTensor();
  if (!tensor.defined()) return {};
  const c10::IntArrayRef sizes = tensor.sizes();
  return Dims(sizes.data(), sizes.size());
}

// An int[] argument copied into `storage` (boxed lists hold IValues).
Dims IntsOf(c10::ArrayRef<const c10::IValue> inputs, size_t i, std::array<int64_t, 4>& storage) {
  if (i >= inputs.size()) return {};
  const c10::IValue& value = inputs[i];
  if (value.isInt()) {
    storage[0] = value.toInt();
    return Dims(storage.data(), 1);
  }
  if (!value.isIntList()) return {};
  const c10::List<int64_t> list = value.toIntList();
  const size_t n = std::min<size_t>(list.size(), storage.size());
  for (size_t k = 0; k < n; ++k) storage[k] = list.get(k);
  return Dims(storage.data(), n);
}

uint64_t ComputeFlops(uint32_t op, c10::ArrayRef<const c10::IValue> in) {
  switch (op) {
    case TRAINSCOPE_FLOP_MM:
      return MmFlops(SizesOf(in, 0), SizesOf(in, 1));
    case TRAINSCOPE_FLOP_BMM:
      return BmmFlops(SizesOf(in, 0), SizesOf(in, 1));
    case TRAINSCOPE_FLOP_MATMUL:
      return MatmulFlops(SizesOf(in, 0), SizesOf(in, 1));
    case TRAINSCOPE_FLOP_ADDMM:
      return AddmmFlops(SizesOf(in, 1), SizesOf(in, 2));
    case TRAINSCOPE_FLOP_LINEAR:
      return LinearFlops(SizesOf(in, 0), SizesOf(in, 1));
    case TRAINSCOPE_FLOP_CONV2D:
    case TRAINSCOPE_FLOP_CONVOLUTION: {
      std::array<int64_t, 4> stride{}, padding{}, dilation{}, output_padding{};
      ConvGeometry g;
      g.stride = IntsOf(in, 3, stride);
      if (in.size() > 4 && in[4].isString()) {
        g.padding_same = in[4].toStringRef() == "same";  // "valid" is no padding
      } else {
        g.padding = IntsOf(in, 4, padding);
      }
      g.dilation = IntsOf(in, 5, dilation);
      if (op == TRAINSCOPE_FLOP_CONV2D) {
        g.groups = in.size() > 6 && in[6].isInt() ? in[6].toInt() : 1;
      } else {
        g.transposed = in.size() > 6 && in[6].isBool() && in[6].toBool();
        g.output_padding = IntsOf(in, 7, output_padding);
        g.groups = in.size() > 8 && in[8].isInt() ? in[8].toInt() : 1;
      }
      return ConvolutionFlops(SizesOf(in, 0), SizesOf(in, 1), g);
    }
    default:
      break;
  }
  return 0;
}

// ---- the callbacks ---------------------------------------------------------

// An optimizer step's frame: it carries the running step to its exit.
__attribute__((noinline)) void EnterOptimizer(const Targets* t, Frame& f) {
  f.general = true;
  f.aux = trainscope_observer_running_step(t->observer);
}

std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction& rf) {
  const Targets* t = g_targets.load(std::memory_order_acquire);
  if (t == nullptr) [[unlikely]]
    return nullptr;
  ThreadState* ts = t_state;
  if (ts == nullptr || ts->generation != t->generation) [[unlikely]] {
    ts = ResetThreadState(t);
    if (ts == nullptr) return nullptr;
  }
  const trainscope_op_info* info = Lookup(ts, t, rf.name());
  if (Has(info, TRAINSCOPE_OP_COLLECTIVE) || rf.isAsync()) [[unlikely]]
    return EnterAsync(rf, t, ts, info);
  const uint32_t d = ts->depth++;
  const bool opens_backward = OpensBackward(rf, info);
  if (opens_backward) ++ts->backward_depth;
  if (info->flop != TRAINSCOPE_FLOP_NONE) ++ts->flop_depth;
  if (d < kMaxDepth) [[likely]] {
    Frame& f = ts->frames[d];
    f.rf = &rf;
    f.info = info;
    f.opens_backward = opens_backward;
    if (Has(info, TRAINSCOPE_OP_OPTIMIZER_STEP)) [[unlikely]] {
      EnterOptimizer(t, f);
    } else {
      f.aux = 0;
      f.general = false;
    }
    // Kernels launched inside name this operator (CUPTI external correlation).
    f.gpu_pushed = t->gpu;
    if (t->gpu) [[unlikely]]
      trainscope_observer_gpu_operator_begin(t->observer, info, SequenceValue(rf));
    f.start_ticks = Ticks(t);  // last: the callback's own work is not timed
  }
  return nullptr;
}

// Too deep to have had a frame (not timed): only undo the scope counts.
__attribute__((noinline)) void ExitUntimed(const at::RecordFunction& rf, const Targets* t,
                                           ThreadState* ts) {
  const trainscope_op_info* info = Lookup(ts, t, rf.name());
  if (OpensBackward(rf, info) && ts->backward_depth > 0) --ts->backward_depth;
  if (info->flop != TRAINSCOPE_FLOP_NONE && ts->flop_depth > 0) --ts->flop_depth;
}

// Not the innermost range we started: something ended out of order. Drop the
// stack rather than mislabel what follows (and close every CUPTI bracket it
// holds: they must pair on this thread).
__attribute__((noinline)) void ExitOutOfOrder(const Targets* t, ThreadState* ts, uint32_t d) {
  for (uint32_t i = 0; i <= d; ++i) {
    if (ts->frames[i].gpu_pushed) trainscope_observer_gpu_operator_end(t->observer);
  }
  ts->depth = 0;
  ts->backward_depth = 0;
  ts->flop_depth = 0;
}

// One call into the agent library: clock mapping, the operator, its FLOPs
// counter, the optimizer phase or the derived phases. For what a raw record
// cannot carry, and while the agent does not take raw records (dormant,
// sampling, no ring).
__attribute__((noinline)) void ExitGeneral(const at::RecordFunction& rf, const Targets* t,
                                           const Frame& f, uint32_t d, uint64_t end_ticks,
                                           bool backward) {
  const bool flop_op = f.info->flop != TRAINSCOPE_FLOP_NONE;
  trainscope_observer_operator(t->observer, f.info, f.start_ticks, end_ticks, SequenceValue(rf),
                               backward ? 1 : 0, flop_op ? f.aux : 0, flop_op ? 0 : f.aux,
                               d == 0 ? 1 : 0);
}

void OnExit(const at::RecordFunction& rf, at::ObserverContext* context) {
  if (context != nullptr) [[unlikely]] {
    ExitAsync(rf, *static_cast<const AsyncContext*>(context));
    return;
  }
  const Targets* t = g_targets.load(std::memory_order_acquire);
  if (t == nullptr) [[unlikely]]
    return;
  const uint64_t end_ticks = Ticks(t);
  ThreadState* ts = t_state;
  if (ts == nullptr || ts->generation != t->generation || ts->depth == 0) [[unlikely]]
    return;
  const uint32_t d = --ts->depth;
  if (d >= kMaxDepth) [[unlikely]] {
    ExitUntimed(rf, t, ts);
    return;
  }
  const Frame& f = ts->frames[d];
  if (f.rf != &rf) [[unlikely]] {
    ExitOutOfOrder(t, ts, d);
    return;
  }
  if (f.gpu_pushed) [[unlikely]]
    trainscope_observer_gpu_operator_end(t->observer);
  const trainscope_op_info* info = f.info;
  const bool backward = ts->backward_depth > 0;
  if (f.opens_backward) --ts->backward_depth;
  if (info->flop != TRAINSCOPE_FLOP_NONE) --ts->flop_depth;
  const trainscope_raw_ring* ring = ts->ring;
  // A plain operator: one raw record into this thread's ring, no call, no
  // clock mapping (the sender maps the ticks); top-level ones also move the
  // step's phase ticks.
  if (f.general || ring == nullptr || !trainscope_raw_ring_accepts(ring)) [[unlikely]] {
    ExitGeneral(rf, t, f, d, end_ticks, backward);
    return;
  }
  if (d == 0 && !Has(info, TRAINSCOPE_OP_EXCLUDED_FROM_PHASES)) {
    trainscope_phase_ticks_update(t->phases, f.start_ticks, end_ticks, backward ? 1 : 0);
  }
  trainscope_raw_ring_push_operator(
      ring, info->id, f.start_ticks, end_ticks, SequenceValue(rf),
      backward ? TRAINSCOPE_SCOPE_BACKWARD : TRAINSCOPE_SCOPE_FORWARD);
}

// Registered after OnEnter, so the operator's frame is already on the stack.
std::unique_ptr<at::ObserverContext> OnEnterShapes(const at::RecordFunction& rf) {
  const Targets* t = g_targets.load(std::memory_order_acquire);
  ThreadState* ts = t_state;
  if (t == nullptr || ts == nullptr || ts->generation != t->generation) return nullptr;
  const uint32_t d = ts->depth;
  if (d == 0 || d > kMaxDepth) return nullptr;
  Frame& f = ts->frames[d - 1];
  // Only the outermost FLOP operator: linear's addmm, conv2d's convolution
  // would count the same work again.
  if (f.rf != &rf || f.info->flop == TRAINSCOPE_FLOP_NONE || ts->flop_depth != 1) return nullptr;
  f.aux = ComputeFlops(f.info->flop, rf.inputs());
  if (f.aux != 0) f.general = true;  // its FLOPs counter needs the general path
  return nullptr;
}

class RecordFunctionObserver {
 public:
  explicit RecordFunctionObserver(const trainscope_observer* observer)
      : targets_{observer, trainscope_observer_phase_ticks(observer),
                 trainscope_observer_generation(observer),
                 trainscope_observer_uses_tsc(observer) != 0,
                 trainscope_observer_gpu_requested(observer) != 0} {
    // Added disabled-by-default in effect: the targets are published only
    // after both callbacks are switched off, so nothing records early.
    ops_handle_ =
        at::addGlobalCallback(at::RecordFunctionCallback(&OnEnter, &OnExit).needsInputs(false));
    at::disableCallback(ops_handle_);
    shapes_handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&OnEnterShapes)
                                               .needsInputs(true)
                                               .scopes({at::RecordScope::FUNCTION}));
    at::disableCallback(shapes_handle_);
    g_targets.store(&targets_, std::memory_order_release);
  }

  ~RecordFunctionObserver() {
    // Bounded: a collective stuck on a dead peer must not hang the detach.
    for (int i = 0; i < 1000 && g_open_collectives.load(std::memory_order_acquire) > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    at::removeCallback(shapes_handle_);
    at::removeCallback(ops_handle_);
    // Ranges still open keep calling OnExit; without targets it returns. The
    // session keeps the observer's pointees alive after this (Close).
    g_targets.store(nullptr, std::memory_order_release);
    g_installed.store(false, std::memory_order_release);
  }

  void SetRecording(bool enabled) {
    if (enabled) {
      at::reenableCallback(ops_handle_);
    } else {
      at::disableCallback(ops_handle_);
    }
  }

  void SetShapes(bool enabled) {
    if (enabled) {
      at::reenableCallback(shapes_handle_);
    } else {
      at::disableCallback(shapes_handle_);
    }
  }

 private:
  // Read by callbacks still running on other threads until removeCallback
  // returns; the observer outlives them (destroyed after removal).
  const Targets targets_;
  at::CallbackHandle ops_handle_ = at::INVALID_CALLBACK_HANDLE;
  at::CallbackHandle shapes_handle_ = at::INVALID_CALLBACK_HANDLE;
};

void CopyError(const char* text, char* error, size_t error_len) {
  if (error == nullptr || error_len == 0) return;
  std::strncpy(error, text, error_len - 1);
  error[error_len - 1] = '\0';
}

}  // namespace

int InstallRecordFunctionObserver(void* /*user_data*/, const trainscope_observer* observer,
                                  trainscope_hook* out, char* error, size_t error_len) {
  if (g_installed.exchange(true, std::memory_order_acq_rel)) {
    CopyError(
        "a trainscope RecordFunction observer is already installed in this process; detach "
        "the current session first",
        error, error_len);
    return 1;
  }
  try {
    auto* observer_object = new RecordFunctionObserver(observer);
    out->self = observer_object;
    out->set_recording = [](void* self, int enabled) {
      static_cast<RecordFunctionObserver*>(self)->SetRecording(enabled != 0);
    };
    out->set_shapes = [](void* self, int enabled) {
      static_cast<RecordFunctionObserver*>(self)->SetShapes(enabled != 0);
    };
    out->destroy = [](void* self) { delete static_cast<RecordFunctionObserver*>(self); };
    return 0;
  } catch (const std::exception& e) {
    g_installed.store(false, std::memory_order_release);
    CopyError(e.what(), error, error_len);
    return 1;
  }
}

}  // namespace trainscope::pytorch
