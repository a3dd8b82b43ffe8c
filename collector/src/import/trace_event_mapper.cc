#include "trainscope/collector/import/trace_event_mapper.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace trainscope::collector {
namespace {

constexpr char kStepPrefix[] = "ProfilerStep#";
// record_param_comms waiting for their device work; past this the oldest
// becomes an operator.
constexpr size_t kMaxAwaiting = 4096;
// Launches remembered per pending record_param_comms.
constexpr size_t kMaxLaunchedPerRecord = 16;
// How long after its end a record_param_comms waits for its device work
// (trace time); then it is an operator.
constexpr int64_t kMaxAwaitNs = 1'000'000'000;

// The collective a CPU range is by itself: c10d's "<backend>:<op>" work
// names, trainscope's export categories.
v1::CollectiveKind CpuCollectiveOf(absl::string_view name, absl::string_view cat) {
  for (const char* backend : {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:"}) {
    if (absl::StartsWith(name, backend)) return CollectiveKindOf(name);
  }
  if (cat == "collective" || cat == "send" || cat == "recv") {
    const v1::CollectiveKind kind = CollectiveKindOf(name);
    if (kind != v1::COLLECTIVE_KIND_UNSPECIFIED) return kind;
    return cat == "send"   ? v1::COLLECTIVE_KIND_SEND
           : cat == "recv" ? v1::COLLECTIVE_KIND_RECV
                           : v1::COLLECTIVE_KIND_ALL_REDUCE;
  }
  return v1::COLLECTIVE_KIND_UNSPECIFIED;
}

}  // namespace

void TraceMappingStats::Add(const TraceMappingStats& o) {
  events += o.events;
  operators += o.operators;
  collectives += o.collectives;
  steps += o.steps;
  kernels += o.kernels;
  nccl_kernels += o.nccl_kernels;
  nccl_joined += o.nccl_joined;
  memcpys += o.memcpys;
  memsets += o.memsets;
  runtime_calls += o.runtime_calls;
  gpu_linked += o.gpu_linked;
  gpu_unlinked += o.gpu_unlinked;
  launches_forgotten += o.launches_forgotten;
  flows += o.flows;
  gpu_annotations_skipped += o.gpu_annotations_skipped;
  gpu_syncs_skipped += o.gpu_syncs_skipped;
  profiler_spans_skipped += o.profiler_spans_skipped;
}

TraceEventMapper::TraceEventMapper(TraceEventSorter* strings, TraceEventMapperOptions options,
                                   Sink sink)
    : strings_(strings),
      options_(std::move(options)),
      sink_(std::move(sink)),
      linker_(options_.launch_capacity) {
  default_group_ = strings_->Intern("default_pg");
  param_comms_ = strings_->Intern("record_param_comms");
}

TraceMappingStats TraceEventMapper::stats() const {
  TraceMappingStats s = stats_;
  s.launches_forgotten = linker_.forgotten();
  s.flows = linker_.flows();
  return s;
}

KinetoCategory TraceEventMapper::Category(uint32_t cat) {
  auto it = categories_.find(cat);
  if (it != categories_.end()) return it->second;
  const KinetoCategory c = CategoryOf(strings_->str(cat));
  categories_.emplace(cat, c);
  return c;
}

uint64_t TraceEventMapper::Bytes(const SortedTraceEvent& e) const {
  // What one rank's collective moves: the larger of its input and output
  // (an all-gather's output is the world's inputs).
  return std::max(e.in_nelems, e.out_nelems) * DtypeBytes(strings_->str(e.dtype));
}

absl::Status TraceEventMapper::Map(const SortedTraceEvent& e) {
  if (e.phase != TraceEvent::Phase::kComplete) {
    linker_.OnFlow(e);
    return absl::OkStatus();
  }
  ++stats_.events;
  const KinetoCategory cat = Category(e.cat);
  // Every thread's operators that ended by now are queued before anything
  // is released: a record_param_comms decided only when it closes must not
  // come after what ended after it (its parent, say).
  for (const auto& [tid, stack] : stacks_) {
    if (stack.empty() || stack.back().end_ns > e.ts_ns) continue;
    if (absl::Status s = PopEnded(tid, e.ts_ns); !s.ok()) return s;
  }
  if (absl::Status s = ExpireAwaiting(e.ts_ns); !s.ok()) return s;
  if (absl::Status s = Release(e.ts_ns); !s.ok()) return s;
  if (absl::Status s = EmitStepMarksUpTo(e.ts_ns); !s.ok()) return s;
  switch (cat) {
    case KinetoCategory::kGpuAnnotation:
      ++stats_.gpu_annotations_skipped;
      return absl::OkStatus();
    case KinetoCategory::kGpuSync:
      ++stats_.gpu_syncs_skipped;
      return absl::OkStatus();
    case KinetoCategory::kProfilerSpan:
      ++stats_.profiler_spans_skipped;
      return absl::OkStatus();
    case KinetoCategory::kKernel:
    case KinetoCategory::kMemcpy:
    case KinetoCategory::kMemset:
      return MapDevice(e, cat);
    case KinetoCategory::kRuntime:
      return MapRuntime(e);
    case KinetoCategory::kCpu:
      break;
  }
  return MapCpu(e);
}

absl::Status TraceEventMapper::Emit(const MappedEvent& m) {
  held_.push({m.start_ns + std::max<int64_t>(m.duration_ns, 0), held_seq_++, m});
  return absl::OkStatus();
}

absl::Status TraceEventMapper::Release(int64_t up_to_ns) {
  // Nothing may pass a record_param_comms still waiting for its kind: it is
  // emitted at its end, when that is known.
  const int64_t barrier =
      awaiting_ends_.empty() ? up_to_ns : std::min(up_to_ns, *awaiting_ends_.begin());
  while (!held_.empty() && held_.top().end_ns <= barrier) {
    if (absl::Status s = sink_(held_.top().event); !s.ok()) return s;
    held_.pop();
  }
  return absl::OkStatus();
}

absl::Status TraceEventMapper::ExpireAwaiting(int64_t now_ns) {
  while (!awaiting_.empty()) {
    AwaitingKernel& oldest = awaiting_.front();
    if (!oldest.done) {
      if (now_ns - oldest.record.end_ns() < kMaxAwaitNs) break;
      if (absl::Status s = Decide(oldest, std::nullopt, nullptr); !s.ok()) return s;
    }
    for (uint64_t c : oldest.launched) awaiting_by_launch_.erase(c);
    awaiting_.pop_front();
    ++awaiting_offset_;
  }
  return absl::OkStatus();
}

absl::Status TraceEventMapper::Decide(AwaitingKernel& a,
                                      std::optional<v1::CollectiveKind> nccl_kind,
                                      GpuLaunchLinker::Launch* launch) {
  a.done = true;
  awaiting_ends_.erase(awaiting_ends_.find(a.record.end_ns()));
  if (!nccl_kind) return EmitOperator(a.record);
  absl::StatusOr<Collective> c = EmitCollective(a.record, *nccl_kind, strings_->str(a.record.name));
  if (!c.ok()) return c.status();
  if (launch != nullptr) {
    launch->collective = true;
    launch->group = c->group;
    launch->group_sequence = c->sequence;
    launch->collective_kind = static_cast<uint32_t>(c->kind);
    launch->bytes = c->bytes;
  }
  return absl::OkStatus();
}

absl::Status TraceEventMapper::EmitStepMarksUpTo(int64_t at_ns) {
  const std::vector<int64_t>& starts = options_.step_starts_ns;
  while (next_found_step_ < starts.size() && starts[next_found_step_] <= at_ns) {
    MappedEvent m;
    m.kind = v1::EVENT_KIND_STEP_MARK;
    m.start_ns = starts[next_found_step_];
    m.name = "step";
    m.thread = static_cast<uint32_t>(options_.step_thread);
    m.value = next_found_step_;
    ++next_found_step_;
    ++stats_.steps;
    if (absl::Status s = Emit(m); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status TraceEventMapper::EmitOperator(const SortedTraceEvent& e) {
  MappedEvent m;
  m.kind = v1::EVENT_KIND_OPERATOR;
  m.start_ns = e.ts_ns;
  m.duration_ns = e.dur_ns;
  m.name = strings_->str(e.name);
  m.thread = static_cast<uint32_t>(e.tid);
  ++stats_.operators;
  return Emit(m);
}

absl::StatusOr<TraceEventMapper::Collective> TraceEventMapper::EmitCollective(
    const SortedTraceEvent& e, v1::CollectiveKind kind, absl::string_view name) {
  Collective c;
  c.group = e.group != 0 ? e.group : default_group_;
  uint64_t& seen = cpu_sequences_[c.group];
  ++seen;
  c.sequence = e.has_sequence ? e.sequence : seen;
  c.kind = kind;
  c.bytes = Bytes(e);
  MappedEvent m;
  m.kind = v1::EVENT_KIND_COLLECTIVE;
  m.start_ns = e.ts_ns;
  m.duration_ns = e.dur_ns;
  m.name = name;
  m.thread = static_cast<uint32_t>(e.tid);
  m.detail = static_cast<uint32_t>(kind);
  m.value = c.bytes;
  m.group = strings_->str(c.group);
  m.group_sequence = c.sequence;
  ++stats_.collectives;
  if (absl::Status s = Emit(m); !s.ok()) return s;
  return c;
}

absl::Status TraceEventMapper::Close(Frame& frame) {
  if (!frame.pending) return absl::OkStatus();
  if (!frame.launched.empty()) {
    // Its device work decides (ResolveAwaiting).
    for (uint64_t c : frame.launched) {
      awaiting_by_launch_[c] = awaiting_offset_ + awaiting_.size();
    }
    awaiting_ends_.insert(frame.pending->end_ns());
    awaiting_.push_back({*frame.pending, std::move(frame.launched), false});
    frame.pending.reset();
    while (awaiting_.size() > kMaxAwaiting) {
      AwaitingKernel& oldest = awaiting_.front();
      if (!oldest.done) {
        if (absl::Status s = Decide(oldest, std::nullopt, nullptr); !s.ok()) return s;
      }
      for (uint64_t c : oldest.launched) awaiting_by_launch_.erase(c);
      awaiting_.pop_front();
      ++awaiting_offset_;
    }
    return absl::OkStatus();
  }
  // A record_param_comms that enclosed no collective ("wait", barriers'
  // bookkeeping): an operator.
  absl::Status s = EmitOperator(*frame.pending);
  frame.pending.reset();
  return s;
}

absl::Status TraceEventMapper::ResolveAwaiting(uint64_t correlation, absl::string_view kernel,
                                               bool nccl, GpuLaunchLinker::Launch* launch) {
  auto it = awaiting_by_launch_.find(correlation);
  if (it == awaiting_by_launch_.end()) return absl::OkStatus();
  AwaitingKernel& a = awaiting_[it->second - awaiting_offset_];
  for (uint64_t c : a.launched) awaiting_by_launch_.erase(c);
  if (a.done) return absl::OkStatus();
  // Emitted late (at its kernel), which is where its kind became known.
  return Decide(
      a, nccl ? std::optional<v1::CollectiveKind>(CollectiveKindOf(kernel)) : std::nullopt, launch);
}

absl::Status TraceEventMapper::PopEnded(int64_t tid, int64_t at_ns) {
  auto it = stacks_.find(tid);
  if (it == stacks_.end()) return absl::OkStatus();
  std::vector<Frame>& stack = it->second;
  while (!stack.empty() && stack.back().end_ns <= at_ns) {
    if (absl::Status s = Close(stack.back()); !s.ok()) return s;
    stack.pop_back();
  }
  return absl::OkStatus();
}

absl::Status TraceEventMapper::MapCpu(const SortedTraceEvent& e) {
  if (absl::Status s = PopEnded(e.tid, e.ts_ns); !s.ok()) return s;
  const std::string& name = strings_->str(e.name);
  // Steps: the profiler's step annotation, or an export's "step" arg.
  std::optional<uint64_t> step;
  if (absl::StartsWith(name, kStepPrefix)) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(absl::string_view(name).substr(sizeof(kStepPrefix) - 1), &n)) step = n;
  } else if (e.has_step && (!step_ || e.step > *step_)) {
    // An export's operators of adjacent steps may interleave: marks only go forward.
    step = e.step;
  }
  if (step) {
    step_ = step;
    MappedEvent m;
    m.kind = v1::EVENT_KIND_STEP_MARK;
    m.start_ns = e.ts_ns;
    m.name = "step";
    m.thread = static_cast<uint32_t>(e.tid);
    m.value = *step;
    ++stats_.steps;
    if (absl::Status s = Emit(m); !s.ok()) return s;
    if (absl::StartsWith(name, kStepPrefix)) return absl::OkStatus();
  }
  std::vector<Frame>& stack = stacks_[e.tid];
  Frame frame;
  frame.end_ns = e.end_ns();
  frame.name = e.name;
  frame.flops = e.flops;
  if (e.name == param_comms_) {
    frame.is_param_comms = true;
    const v1::CollectiveKind kind = CollectiveKindOf(strings_->str(e.collective_name));
    if (e.collective_name != 0 && kind != v1::COLLECTIVE_KIND_UNSPECIFIED) {
      absl::StatusOr<Collective> c = EmitCollective(e, kind, name);
      if (!c.ok()) return c.status();
      frame.collective = *c;
    } else {
      frame.pending = e;  // its kind comes with the c10d work inside it, if any
    }
    stack.push_back(std::move(frame));
    return absl::OkStatus();
  }
  const v1::CollectiveKind kind = CpuCollectiveOf(name, strings_->str(e.cat));
  if (kind != v1::COLLECTIVE_KIND_UNSPECIFIED) {
    Frame* comms = nullptr;
    for (size_t i = stack.size(); i-- > 0;) {
      if (stack[i].is_param_comms) {
        comms = &stack[i];
        break;
      }
    }
    if (comms == nullptr) {
      // The collective itself (no record_param_comms around it).
      absl::StatusOr<Collective> c = EmitCollective(e, kind, name);
      if (!c.ok()) return c.status();
      frame.collective = *c;
      stack.push_back(std::move(frame));
      return absl::OkStatus();
    }
    if (comms->pending) {
      // The record_param_comms is this collective: it takes the kind, and
      // is emitted (under the work's name) before the work itself.
      SortedTraceEvent record = *comms->pending;
      comms->pending.reset();
      absl::StatusOr<Collective> c = EmitCollective(record, kind, name);
      if (!c.ok()) return c.status();
      comms->collective = *c;
    }
    frame.collective = comms->collective;
  }
  if (absl::Status s = EmitOperator(e); !s.ok()) return s;
  stack.push_back(std::move(frame));
  return absl::OkStatus();
}

absl::Status TraceEventMapper::MapRuntime(const SortedTraceEvent& e) {
  if (absl::Status s = PopEnded(e.tid, e.ts_ns); !s.ok()) return s;
  const uint64_t correlation = linker_.CorrelationOf(e);
  GpuLaunchLinker::Launch launch;
  launch.start_ns = e.ts_ns;
  auto it = stacks_.find(e.tid);
  if (it != stacks_.end() && !it->second.empty()) {
    std::vector<Frame>& stack = it->second;
    Frame& innermost = stack.back();
    launch.op_name = innermost.name;
    // The operator's FLOPs go to its first kernel only: the first call that
    // launches one (cuBLAS asks cudaFuncSetAttribute and the occupancy API
    // before it launches, and those put nothing on the device).
    if (RuntimeCallOf(strings_->str(e.name)) == v1::RUNTIME_CALL_LAUNCH) {
      launch.flops = innermost.flops;
      innermost.flops = 0;
    }
    for (size_t i = stack.size(); i-- > 0;) {
      if (stack[i].pending) {
        // Only calls that put work on the device (not cudaStreamWaitEvent,
        // cudaEventRecord...) can decide it: nothing else ever follows.
        const v1::RuntimeCall call = RuntimeCallOf(strings_->str(e.name));
        if (correlation != 0 && stack[i].launched.size() < kMaxLaunchedPerRecord &&
            (call == v1::RUNTIME_CALL_LAUNCH || call == v1::RUNTIME_CALL_COPY)) {
          stack[i].launched.push_back(correlation);
        }
        break;
      }
      if (stack[i].collective) {
        const Collective& c = *stack[i].collective;
        launch.collective = true;
        launch.group = c.group;
        launch.group_sequence = c.sequence;
        launch.collective_kind = static_cast<uint32_t>(c.kind);
        launch.bytes = c.bytes;
        break;
      }
    }
  }
  linker_.AddLaunch(correlation, launch);
  MappedEvent m;
  m.kind = v1::EVENT_KIND_GPU_RUNTIME;
  m.start_ns = e.ts_ns;
  m.duration_ns = e.dur_ns;
  m.name = strings_->str(e.name);
  m.thread = static_cast<uint32_t>(e.tid);
  m.detail = static_cast<uint32_t>(RuntimeCallOf(m.name));
  m.value = correlation;
  ++stats_.runtime_calls;
  return Emit(m);
}

absl::Status TraceEventMapper::MapDevice(const SortedTraceEvent& e, KinetoCategory cat) {
  MappedEvent m;
  m.start_ns = e.ts_ns;
  m.duration_ns = e.dur_ns;
  m.name = strings_->str(e.name);
  m.thread = 0;  // the stream is gpu_stream
  m.gpu_device = static_cast<uint32_t>(e.has_device ? e.device : e.pid);
  m.gpu_stream = static_cast<uint32_t>(e.has_stream ? e.stream : e.tid);
  const uint64_t correlation = linker_.CorrelationOf(e);
  GpuLaunchLinker::Launch* launch = linker_.Find(correlation);
  const bool nccl = cat == KinetoCategory::kKernel && IsNcclKernelName(m.name);
  if (correlation != 0 && !awaiting_by_launch_.empty()) {
    if (absl::Status s = ResolveAwaiting(correlation, m.name, nccl, launch); !s.ok()) return s;
  }
  if (launch != nullptr) {
    m.gpu_correlation = correlation;
    m.gpu_launch_delta_ns = std::min<int64_t>(launch->start_ns - e.ts_ns, 0);
    m.gpu_launch_op = strings_->str(launch->op_name);
    ++stats_.gpu_linked;
  } else {
    ++stats_.gpu_unlinked;
  }
  switch (cat) {
    case KinetoCategory::kMemcpy:
      m.kind = v1::EVENT_KIND_GPU_MEMCPY;
      m.detail = static_cast<uint32_t>(CopyKindOf(m.name));
      m.value = e.bytes;
      ++stats_.memcpys;
      break;
    case KinetoCategory::kMemset:
      m.kind = v1::EVENT_KIND_GPU_MEMSET;
      m.value = e.bytes;
      ++stats_.memsets;
      break;
    default:
      if (nccl) {
        m.kind = v1::EVENT_KIND_GPU_COLLECTIVE;
        ++stats_.nccl_kernels;
        if (launch != nullptr && launch->collective) {
          m.detail = launch->collective_kind;
          m.value = launch->bytes;
          m.group = strings_->str(launch->group);
          m.group_sequence = launch->group_sequence;
          ++stats_.nccl_joined;
        } else {
          // No CPU record: the kernel's own args (some Kineto versions copy
          // record_param_comms' onto it), else its name.
          v1::CollectiveKind kind = CollectiveKindOf(strings_->str(e.collective_name));
          if (kind == v1::COLLECTIVE_KIND_UNSPECIFIED) kind = CollectiveKindOf(m.name);
          const uint32_t group = e.group != 0 ? e.group : default_group_;
          m.detail = static_cast<uint32_t>(kind);
          m.value = Bytes(e);
          m.group = strings_->str(group);
          m.group_sequence = ++gpu_sequences_[group];
        }
      } else {
        m.kind = v1::EVENT_KIND_GPU_KERNEL;
        if (launch != nullptr) {
          m.value = launch->flops;
          launch->flops = 0;  // a launch's further kernels (graphs) carry none
        }
        ++stats_.kernels;
      }
      break;
  }
  return Emit(m);
}

absl::Status TraceEventMapper::Finish() {
  for (auto& [tid, stack] : stacks_) {
    while (!stack.empty()) {
      if (absl::Status s = Close(stack.back()); !s.ok()) return s;
      stack.pop_back();
    }
  }
  // Whose device work never came: operators.
  for (AwaitingKernel& a : awaiting_) {
    if (a.done) continue;
    if (absl::Status s = Decide(a, std::nullopt, nullptr); !s.ok()) return s;
  }
  awaiting_.clear();
  awaiting_by_launch_.clear();
  if (absl::Status s = EmitStepMarksUpTo(INT64_MAX); !s.ok()) return s;
  return Release(INT64_MAX);
}

}  // namespace trainscope::collector
