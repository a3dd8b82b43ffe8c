#include "record_function_observer.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
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

// Frame::bits. kFrameBackward and kFrameExcluded are the op_info flags of the
// same meaning, so an operator's flags are or'ed in unshifted.
constexpr uint8_t kFrameBackward = TRAINSCOPE_OP_OPENS_BACKWARD;  // inside a backward range
constexpr uint8_t kFrameExcluded = TRAINSCOPE_OP_EXCLUDED_FROM_PHASES;
// Not a plain operator (optimizer range, FLOPs to count): OnExit takes the
// general path (ExitGeneral) with ThreadState::aux instead of a raw record.
constexpr uint8_t kFrameGeneral = 0x80;
static_assert(((kFrameBackward | kFrameExcluded) & kFrameGeneral) == 0);

// What the callbacks record into: the session's observer (the C API of
// libtrainscope_agent.so) and what is fixed for it, read once at install.
struct Targets {
  const trainscope_observer* observer;
  trainscope_phase_ticks* phases;  // the derived phases, updated in place
  uint64_t generation;
  bool uses_tsc;
  bool gpu;  // bracket operators so their kernels name them
};

// One operator in progress on this thread.
struct Frame {
  const at::RecordFunction* rf;
  const trainscope_op_info* info;
  uint64_t start_ticks;
  uint8_t bits;  // kFrame*
};

// Everything the hot path touches on one thread, allocated on its first
// operator. Trivially constructible: zero means empty.
struct ThreadState {
  const Targets* targets;  // the session's (the generation in t_local)
  trainscope_phase_ticks* phases;
  // A copy of this thread's ring words in the session's agent (stable for
  // the ring's life): OnExit writes a raw record through them without a
  // call. kNoRing (accepts nothing: the general path counts the drop) when
  // the agent gave this thread no ring.
  trainscope_raw_ring ring;
  trainscope_raw_cursor cursor;  // this thread's bound on `ring` (zero: read the tail)
  // The innermost timed frame: frames[0], the root (no rf, bits 0), when
  // none. A pointer rather than a depth: the callbacks use it as is, and a
  // frame's parent (top - 1) always exists, so the scope bits are inherited
  // without a branch.
  Frame* top;
  const Frame* last;  // &frames[kMaxDepth]: deeper ranges are not timed
  uint32_t untimed;   // ranges open inside `last` (counted, not timed)
  OpNameCache names;  // name -> the session's entry
  Frame frames[kMaxDepth + 1];
  uint64_t aux[kMaxDepth + 1];  // of kFrameGeneral frames: FLOPs, or the optimizer's step
};

// The callbacks are plain function pointers: they find their session here.
// g_generation is the installed session's generation (kNoSession: none); the
// hot paths compare it with their thread's and go on with that thread's
// state alone, g_targets is read where a thread (re)starts.
constexpr uint64_t kNoSession = ~0ull;  // generations count from 1; a thread's starts at 0
std::atomic<const Targets*> g_targets{nullptr};
std::atomic<uint64_t> g_generation{kNoSession};
std::atomic<bool> g_installed{false};

// A thread's state and the session it was made for; zero until its first
// operator. One TLS block: the callbacks read both with one TLS address.
struct ThreadLocal {
  uint64_t generation;
  ThreadState* state;
};
// Initial-exec: a dlopen'ed module's default TLS model costs a __tls_get_addr
// call per access; two words fit in the static TLS surplus.
__thread ThreadLocal t_local __attribute__((tls_model("initial-exec"))) = {0, nullptr};
__thread bool t_exiting __attribute__((tls_model("initial-exec"))) = false;

// The ring words of a thread the agent gave no ring: it never accepts.
constexpr uint8_t kNeverAccepts = 0;
constexpr uint32_t kNoSampling = 1;
const trainscope_raw_ring kNoRing = {.head = nullptr,
                                     .tail = nullptr,
                                     .cached_tail = nullptr,
                                     .slots = nullptr,
                                     .mask = 0,
                                     .capacity = 0,
                                     .dropped_full = nullptr,
                                     .recording = &kNeverAccepts,
                                     .sampling_period = &kNoSampling};

// Frees a thread's state when the thread exits.
struct ThreadStateOwner {
  ThreadState* state = nullptr;
  ~ThreadStateOwner() {
    t_exiting = true;
    t_local = {0, nullptr};
    delete state;
  }
};

// First operator of a thread, or the first under a new session: (re)start.
__attribute__((noinline)) ThreadState* ResetThreadState(const Targets* targets) {
  if (t_exiting) return nullptr;
  // First: the agent's thread-local ring holder is then made before the
  // owner below and destroyed after it, so the ring outlives every use of
  // ts->ring on this thread (the owner clears t_local first).
  const trainscope_raw_ring* ring = trainscope_observer_thread_ring(targets->observer);
  ThreadState* ts = t_local.state;
  if (ts == nullptr) {
    ts = new (std::nothrow) ThreadState();
    if (ts == nullptr) return nullptr;
    thread_local ThreadStateOwner owner;
    owner.state = ts;
  } else {
    std::memset(static_cast<void*>(ts), 0, sizeof(ThreadState));
  }
  ts->targets = targets;
  ts->phases = targets->phases;
  ts->ring = ring != nullptr ? *ring : kNoRing;
  ts->top = &ts->frames[0];
  ts->last = &ts->frames[kMaxDepth];
  t_local = {targets->generation, ts};
  return ts;
}

// The state of this thread for the installed session, (re)started if need
// be; null when there is no session (or no memory, or the thread is exiting).
ThreadState* CurrentThreadState(const Targets* t) {
  if (t == nullptr) return nullptr;
  if (t_local.generation == t->generation) return t_local.state;
  return ResetThreadState(t);
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

// The hot callbacks are instantiated per clock (and per GPU bracketing): no
// test of the session's choice per operator.
template <bool kTsc>
inline uint64_t Ticks() {
  if constexpr (kTsc) {
    return __rdtsc();
  } else {
    return MonotonicTicks();
  }
}

inline uint64_t Ticks(const Targets* t) { return t->uses_tsc ? __rdtsc() : MonotonicTicks(); }

inline bool Has(const trainscope_op_info* info, uint32_t flag) { return (info->flags & flag) != 0; }

const trainscope_op_info* Resolve(const void* observer, const char* name, size_t length) {
  return trainscope_observer_find_op(static_cast<const trainscope_observer*>(observer), name,
                                     length);
}

// Torch's "no sequence number" is -1: it maps to 0 (none), n to n + 1.
inline uint64_t SequenceValue(const at::RecordFunction& rf) {
  return static_cast<uint64_t>(rf.seqNr() + 1);
}

// A frame's kFrameBackward and kFrameExcluded: inside a backward range when
// its parent is or it opens one (autograd's evaluate_function by name, or a
// BACKWARD_FUNCTION range).
inline uint8_t FrameBits(const at::RecordFunction& rf, const trainscope_op_info* info,
                         const Frame& parent) {
  return static_cast<uint8_t>(
      (parent.bits & kFrameBackward) | (info->flags & (kFrameBackward | kFrameExcluded)) |
      (rf.scope() == at::RecordScope::BACKWARD_FUNCTION ? kFrameBackward : 0));
}

// The innermost timed frame's backward bit (for a range that gets no frame).
inline bool InBackward(const ThreadState* ts) { return (ts->top->bits & kFrameBackward) != 0; }

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
  context->backward = InBackward(ts);
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

// Pushes the operator's frame on top of the innermost one (not `last`) and
// starts its clock last, so the callback's own work is not timed.
inline void PushFrame(const at::RecordFunction& rf, ThreadState* ts, const trainscope_op_info* info,
                      bool gpu, uint8_t extra_bits, uint64_t aux) {
  Frame* const parent = ts->top;
  Frame* const f = parent + 1;
  ts->top = f;
  f->rf = &rf;
  f->info = info;
  f->bits = FrameBits(rf, info, *parent) | extra_bits;
  ts->aux[f - ts->frames] = aux;
  // Kernels launched inside name this operator (CUPTI external correlation).
  if (gpu) trainscope_observer_gpu_operator_begin(ts->targets->observer, info, SequenceValue(rf));
  f->start_ticks = Ticks(ts->targets);
}

// Everything OnEnter's fast path leaves out: a thread's first operator or
// the first under a new session, a name not in the cache (or longer than 31
// bytes), collectives and async ranges, optimizer ranges, ranges too deep to
// time.
__attribute__((noinline)) std::unique_ptr<at::ObserverContext> EnterSlow(
    const at::RecordFunction& rf, const char* name, bool async) {
  const Targets* t = g_targets.load(std::memory_order_acquire);
  ThreadState* ts = CurrentThreadState(t);
  if (ts == nullptr) return nullptr;
  const trainscope_op_info* info = ts->names.Find(name, &Resolve, t->observer);
  if (Has(info, TRAINSCOPE_OP_COLLECTIVE) || async) return EnterAsync(rf, t, ts, info);
  if (ts->top == ts->last) {
    ++ts->untimed;
    return nullptr;
  }
  if (Has(info, TRAINSCOPE_OP_OPTIMIZER_STEP)) {
    // Its frame carries the running step to its exit (PHASE_OPTIMIZER's step).
    PushFrame(rf, ts, info, t->gpu, kFrameGeneral, trainscope_observer_running_step(t->observer));
  } else {
    PushFrame(rf, ts, info, t->gpu, 0, 0);
  }
  return nullptr;
}

// The steady state: a plain operator whose name this thread has cached. No
// call but torch's two accessors (before anything else, so that only rf and
// the name live across them), one TLS block, the cached entry, a frame.
template <bool kTsc, bool kGpu>
std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction& rf) {
  const char* name = rf.name();
  const bool async = rf.isAsync();
  const ThreadLocal local = t_local;
  if (async || local.generation != g_generation.load(std::memory_order_acquire)) [[unlikely]]
    return EnterSlow(rf, name, async);
  ThreadState* ts = local.state;
  const trainscope_op_info* info = ts->names.FindCached(name);
  Frame* const parent = ts->top;
  if (info == nullptr ||
      (info->flags & (TRAINSCOPE_OP_COLLECTIVE | TRAINSCOPE_OP_OPTIMIZER_STEP)) != 0 ||
      parent == ts->last) [[unlikely]]
    return EnterSlow(rf, name, async);
  Frame* const f = parent + 1;
  ts->top = f;
  f->rf = &rf;
  f->info = info;
  f->bits = FrameBits(rf, info, *parent);
  if constexpr (kGpu) {
    trainscope_observer_gpu_operator_begin(ts->targets->observer, info, SequenceValue(rf));
  }
  f->start_ticks = Ticks<kTsc>();  // last: the callback's own work is not timed
  return nullptr;
}

// Not the innermost timed range ending: a range too deep to have been timed,
// a range that started before this thread's state or session (nothing is
// open), or something that ended out of order. The last: drop the stack
// rather than mislabel what follows (and close every CUPTI bracket it holds:
// they must pair on this thread).
__attribute__((noinline)) void ExitUnexpected(ThreadState* ts) {
  if (ts->untimed > 0) {
    --ts->untimed;
    return;
  }
  if (ts->targets->gpu) {
    for (const Frame* f = ts->top; f != &ts->frames[0]; --f) {
      trainscope_observer_gpu_operator_end(ts->targets->observer);
    }
  }
  ts->top = &ts->frames[0];
}

// One call into the agent library: clock mapping, the operator, its FLOPs
// counter, the optimizer phase or the derived phases. For what a raw record
// cannot carry, and while the agent does not take raw records (dormant,
// sampling, no ring).
__attribute__((noinline)) void ExitGeneral(const at::RecordFunction& rf, const ThreadState* ts,
                                           const Frame* f, uint64_t end_ticks) {
  const bool flop_op = f->info->flop != TRAINSCOPE_FLOP_NONE;
  const uint64_t aux = (f->bits & kFrameGeneral) != 0 ? ts->aux[f - ts->frames] : 0;
  const bool top_level = f - 1 == &ts->frames[0];
  trainscope_observer_operator(ts->targets->observer, f->info, f->start_ticks, end_ticks,
                               SequenceValue(rf), (f->bits & kFrameBackward) != 0 ? 1 : 0,
                               flop_op ? aux : 0, flop_op ? 0 : aux, top_level ? 1 : 0);
}

template <bool kTsc, bool kGpu>
void OnExit(const at::RecordFunction& rf, at::ObserverContext* context) {
  if (context != nullptr) [[unlikely]] {
    ExitAsync(rf, *static_cast<const AsyncContext*>(context));
    return;
  }
  const uint64_t end_ticks = Ticks<kTsc>();
  const ThreadLocal local = t_local;
  if (local.generation != g_generation.load(std::memory_order_acquire)) [[unlikely]]
    return;
  ThreadState* ts = local.state;
  Frame* const f = ts->top;
  if (f->rf != &rf) [[unlikely]] {
    ExitUnexpected(ts);
    return;
  }
  ts->top = f - 1;
  if constexpr (kGpu) trainscope_observer_gpu_operator_end(ts->targets->observer);
  // A plain operator: one raw record into this thread's ring, no call, no
  // clock mapping (the sender maps the ticks); top-level ones (their parent
  // is the root, the one frame without rf) also move the step's phase ticks.
  if ((f->bits & kFrameGeneral) != 0 || !trainscope_raw_ring_accepts(&ts->ring)) [[unlikely]] {
    ExitGeneral(rf, ts, f, end_ticks);
    return;
  }
  const bool backward = (f->bits & kFrameBackward) != 0;
  if ((f->bits & kFrameExcluded) == 0 && f[-1].rf == nullptr) {
    trainscope_phase_ticks_update(ts->phases, f->start_ticks, end_ticks, backward ? 1 : 0);
  }
  trainscope_raw_ring_push_operator_at(
      &ts->ring, &ts->cursor, f->info->id, f->start_ticks, end_ticks, SequenceValue(rf),
      backward ? TRAINSCOPE_SCOPE_BACKWARD : TRAINSCOPE_SCOPE_FORWARD);
}

// The FLOPs of `f`, the innermost frame, an operator with a FLOP formula:
// only the outermost FLOP operator counts (linear's addmm, conv2d's
// convolution would count the same work again).
__attribute__((noinline)) void CountFlops(const at::RecordFunction& rf, ThreadState* ts, Frame* f) {
  for (const Frame* outer = f - 1; outer != &ts->frames[0]; --outer) {
    if (outer->info->flop != TRAINSCOPE_FLOP_NONE) return;
  }
  const uint64_t flops = ComputeFlops(f->info->flop, rf.inputs());
  if (flops != 0) {  // its FLOPs counter needs the general path
    ts->aux[f - ts->frames] = flops;
    f->bits |= kFrameGeneral;
  }
}

// Registered after OnEnter, so the operator's frame is already on the stack
// (the root, without rf, when it got none). Most operators have no FLOP
// formula: they return without a call.
std::unique_ptr<at::ObserverContext> OnEnterShapes(const at::RecordFunction& rf) {
  const ThreadLocal local = t_local;
  if (local.generation != g_generation.load(std::memory_order_acquire)) return nullptr;
  ThreadState* ts = local.state;
  Frame* const f = ts->top;
  if (f->rf == &rf && f->info->flop != TRAINSCOPE_FLOP_NONE) [[unlikely]]
    CountFlops(rf, ts, f);
  return nullptr;
}

template <bool kTsc, bool kGpu>
at::RecordFunctionCallback OperatorCallbackFor() {
  return at::RecordFunctionCallback(&OnEnter<kTsc, kGpu>, &OnExit<kTsc, kGpu>);
}

// The session's clock and GPU choice, fixed for its life.
at::RecordFunctionCallback OperatorCallback(const Targets& t) {
  if (t.uses_tsc)
    return t.gpu ? OperatorCallbackFor<true, true>() : OperatorCallbackFor<true, false>();
  return t.gpu ? OperatorCallbackFor<false, true>() : OperatorCallbackFor<false, false>();
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
    ops_handle_ = at::addGlobalCallback(OperatorCallback(targets_).needsInputs(false));
    at::disableCallback(ops_handle_);
    shapes_handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&OnEnterShapes)
                                               .needsInputs(true)
                                               .scopes({at::RecordScope::FUNCTION}));
    at::disableCallback(shapes_handle_);
    g_targets.store(&targets_, std::memory_order_release);
    g_generation.store(targets_.generation, std::memory_order_release);
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
    g_generation.store(kNoSession, std::memory_order_release);
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
