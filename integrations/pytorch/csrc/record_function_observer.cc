#include "record_function_observer.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>

#include <time.h>
#include <x86intrin.h>

#include "collective_tag.h"
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

constexpr uint32_t kMaxDepth = 128;      // deeper ranges are not timed
constexpr uint32_t kPointerSlots = 512;  // per-thread name caches, powers of two
constexpr uint32_t kContentSlots = 512;

// One operator in progress on this thread.
struct Frame {
  const at::RecordFunction* rf;
  const trainscope_op_info* info;
  uint64_t start_ticks;
  uint64_t aux;         // FLOPs of a FLOP operator; the running step of an optimizer range
  bool gpu_pushed;      // bracketed for CUPTI (trainscope_observer_gpu_operator_begin)
  bool opens_backward;  // counted in backward_depth (saves OnExit a RecordFunction call)
};

// Everything the hot path touches on one thread, allocated on its first
// operator. Trivially constructible: zero means empty.
struct ThreadState {
  uint64_t generation;
  uint32_t depth;           // frames pushed, may exceed kMaxDepth
  uint32_t backward_depth;  // open backward ranges
  uint32_t flop_depth;      // open FLOP operators
  // Schema-backed names have stable pointers, but a pointer alone proves
  // nothing (a user range's name lives in a string whose address is reused
  // for other names), so a hit is verified: names up to 15 bytes against the
  // slot's copy of their bytes and NUL (two masked word compares, no call),
  // longer ones by strcmp.
  struct PointerSlot {
    const char* key;
    const trainscope_op_info* info;
    uint64_t head[2];  // the name's first 16 bytes, zero past its NUL
    uint64_t mask[2];  // head's bytes that are the name and its NUL; 0: longer than 15
  } by_pointer[kPointerSlots];
  // Names built per call (autograd nodes, user ranges) live in fresh strings;
  // they are found by content.
  struct ContentSlot {
    uint64_t hash;
    const trainscope_op_info* info;
  } by_content[kContentSlots];
  Frame frames[kMaxDepth];
};

// What the callbacks record into: the session's observer (the C API of
// libtrainscope_agent.so) and what is fixed for it, read once at install.
struct Targets {
  const trainscope_observer* observer;
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
ThreadState* ResetThreadState(const Targets* targets) {
  if (t_exiting) return nullptr;
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
  return ts;
}

uint64_t HashName(const char* name, size_t length) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ length;
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t word;
    std::memcpy(&word, name + i, 8);
    h = (h ^ word) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, name + i, length - i);
  h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

// The session's clock: TSC ticks where the session chose the TSC, else
// CLOCK_MONOTONIC ns (trainscope_now_ns's clock, read here without a call).
inline uint64_t Ticks(const Targets* t) {
  if (t->uses_tsc) [[likely]]
    return __rdtsc();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline bool Has(const trainscope_op_info* info, uint32_t flag) { return (info->flags & flag) != 0; }

const trainscope_op_info* LookupSlow(ThreadState* ts, const Targets* t, const char* name) {
  const size_t length = std::strlen(name);
  const uint64_t hash = HashName(name, length);
  ThreadState::ContentSlot& slot = ts->by_content[hash & (kContentSlots - 1)];
  if (slot.hash == hash && slot.info != nullptr &&
      std::string_view(slot.info->name) == std::string_view(name, length)) {
    return slot.info;
  }
  const trainscope_op_info* info = trainscope_observer_find_op(t->observer, name, length);
  slot = {hash, info};
  return info;
}

constexpr uintptr_t kPageBytes = 4096;

// Fills a pointer slot after a miss (cold: strlen and a copy).
const trainscope_op_info* FillPointerSlot(ThreadState::PointerSlot& slot, ThreadState* ts,
                                          const Targets* t, const char* name) {
  const trainscope_op_info* info = LookupSlow(ts, t, name);
  slot = {name, info, {0, 0}, {0, 0}};
  const size_t bytes = std::strlen(name) + 1;  // with the NUL
  // A hit has this very address, so whether 16 bytes from it stay within its
  // page is decided here, once.
  const bool in_page =
      (reinterpret_cast<uintptr_t>(name) & (kPageBytes - 1)) <= kPageBytes - sizeof(slot.head);
  if (bytes <= sizeof(slot.head) && in_page) {
    std::memcpy(slot.head, name, bytes);
    for (size_t i = 0; i < bytes; ++i) reinterpret_cast<unsigned char*>(slot.mask)[i] = 0xff;
  }
  return info;
}

// True when the 16 bytes at `name` (== slot.key) equal the slot's name up to
// and including its NUL, i.e. `name` is that name: a shorter name differs at
// its NUL, a longer one at the slot's NUL. Bytes past a shorter name's NUL are
// read but masked or compared against non-zero; the slot has a mask only when
// the read stays within name[0]'s page (the strlen technique): no fault.
inline bool HeadMatches(const ThreadState::PointerSlot& slot, const char* name) {
  uint64_t w[2];
  std::memcpy(w, name, sizeof(w));
  return (((w[0] ^ slot.head[0]) & slot.mask[0]) | ((w[1] ^ slot.head[1]) & slot.mask[1])) == 0;
}

inline const trainscope_op_info* Lookup(ThreadState* ts, const Targets* t, const char* name) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(name);
  ThreadState::PointerSlot& slot = ts->by_pointer[((key >> 4) ^ (key >> 13)) & (kPointerSlots - 1)];
  if (slot.key == name) [[likely]] {
    if (slot.mask[0] != 0 ? HeadMatches(slot, name) : std::strcmp(name, slot.info->name) == 0)
        [[likely]] {
      return slot.info;
    }
  }
  return FillPointerSlot(slot, ts, t, name);
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

std::unique_ptr<at::ObserverContext> EnterAsync(const at::RecordFunction& rf,
                                                const Targets* t, ThreadState* ts,
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
    context->group_sequence = trainscope_observer_next_sequence(
        t->observer, context->tag.group, context->tag.peer, p2p ? 1 : 0);
    if (t->gpu) {  // NCCL launches its kernels before this range ends, on this thread
      context->gpu_thread = &t_thread_marker;
      trainscope_observer_gpu_collective_begin(t->observer, info, context->tag,
                                               context->group_sequence, context->bytes);
    }
  }
  context->start_ticks = Ticks(t);
  return context;
}

void ExitAsync(const at::RecordFunction& rf, const AsyncContext& c) {
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
    f.aux = Has(info, TRAINSCOPE_OP_OPTIMIZER_STEP)
                ? trainscope_observer_running_step(t->observer)
                : 0;
    f.opens_backward = opens_backward;
    f.gpu_pushed = t->gpu;
    if (t->gpu) trainscope_observer_gpu_operator_begin(t->observer, info, SequenceValue(rf));
    f.start_ticks = Ticks(t);  // last: the callback's own work is not timed
  }
  return nullptr;
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
    // Too deep to have had a frame (not timed): only undo the scope counts.
    const trainscope_op_info* info = Lookup(ts, t, rf.name());
    if (OpensBackward(rf, info) && ts->backward_depth > 0) --ts->backward_depth;
    if (info->flop != TRAINSCOPE_FLOP_NONE && ts->flop_depth > 0) --ts->flop_depth;
    return;
  }
  const Frame& f = ts->frames[d];
  if (f.rf != &rf) [[unlikely]] {
    // Not the innermost range we started: something ended out of order. Drop
    // the stack rather than mislabel what follows (and close every CUPTI
    // bracket it holds: they must pair on this thread).
    for (uint32_t i = 0; i <= d; ++i) {
      if (ts->frames[i].gpu_pushed) trainscope_observer_gpu_operator_end(t->observer);
    }
    ts->depth = 0;
    ts->backward_depth = 0;
    ts->flop_depth = 0;
    return;
  }
  const trainscope_op_info* info = f.info;
  if (f.gpu_pushed) trainscope_observer_gpu_operator_end(t->observer);
  const bool backward = ts->backward_depth > 0;
  if (f.opens_backward) --ts->backward_depth;
  const bool flop_op = info->flop != TRAINSCOPE_FLOP_NONE;
  if (flop_op) --ts->flop_depth;
  // One call into the agent library: clock mapping, the operator, its FLOPs
  // counter, the optimizer phase or the derived phases.
  trainscope_observer_operator(t->observer, info, f.start_ticks, end_ticks, SequenceValue(rf),
                               backward ? 1 : 0, flop_op ? f.aux : 0, flop_op ? 0 : f.aux,
                               d == 0 ? 1 : 0);
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
  return nullptr;
}

class RecordFunctionObserver {
 public:
  explicit RecordFunctionObserver(const trainscope_observer* observer)
      : targets_{observer, trainscope_observer_generation(observer),
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
