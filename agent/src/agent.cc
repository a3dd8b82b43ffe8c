#include "trainscope/agent/agent.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <new>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clock_domain_id.h"
#include "gpu/cuda_device_query.h"
#include "gpu/gpu_activity.h"
#include "gpu/gpu_event_queue.h"
#include "grpc_transport.h"
#include "launcher_rack.h"
#include "ring_registry.h"
#include "sender.h"
#include "string_table.h"
#include "thread_ring.h"
#include "trainscope/proto/job_id.h"
#include "trainscope/security/job_secret_source.h"
#include "trainscope/v1/agent.pb.h"

#if TRAINSCOPE_WITH_CUPTI
#include "gpu/cupti_library_locator.h"
#include "gpu/cupti_loader.h"
#include "gpu/gpu_activity_tracer.h"
#endif

namespace trainscope::agent {

// The public enums are copied onto the wire as they are.
static_assert(static_cast<int>(EventKind::kCounter) == v1::EVENT_KIND_COUNTER);
static_assert(static_cast<int>(EventKind::kOperatorEnd) == v1::EVENT_KIND_OPERATOR_END);
static_assert(static_cast<int>(EventKind::kGpuKernel) == v1::EVENT_KIND_GPU_KERNEL);
static_assert(static_cast<int>(EventKind::kGpuRuntime) == v1::EVENT_KIND_GPU_RUNTIME);
static_assert(static_cast<int>(CopyKind::kHostToHost) == v1::COPY_KIND_HOST_TO_HOST);
static_assert(static_cast<int>(RuntimeCall::kSync) == v1::RUNTIME_CALL_SYNC);
static_assert(static_cast<int>(CollectiveKind::kScatter) == v1::COLLECTIVE_KIND_SCATTER);
static_assert(static_cast<int>(CollectiveKind::kRecv) == v1::COLLECTIVE_KIND_RECV);
static_assert(static_cast<int>(Phase::kOptimizer) == v1::PHASE_OPTIMIZER);
static_assert(static_cast<int>(OperatorScope::kBackward) == v1::OPERATOR_SCOPE_BACKWARD);

namespace {

constexpr size_t kMaxStrings = 1 << 20;
constexpr uint64_t kMinMemoryBudget = 256 << 10;
constexpr uint32_t kMaxRingCapacity = 1 << 22;
constexpr uint32_t kMaxBatchEvents = 1 << 16;

std::atomic<uint64_t> g_next_agent_serial{1};

// The hot path's lookup: which ring this thread uses for which Agent. Plain
// data, so access needs no TLS guard; serial 0 marks an empty entry.
struct RingCacheEntry {
  uint64_t agent_serial;
  ThreadRing* ring;
};
constexpr int kRingCacheSize = 4;
// Initial-exec: in a dlopen'ed module (the PyTorch extension) the default TLS
// model costs a __tls_get_addr call per record; these 65 bytes fit in the
// static TLS surplus glibc keeps for such modules.
__thread RingCacheEntry tls_ring_cache[kRingCacheSize] __attribute__((tls_model("initial-exec")));
__thread bool tls_thread_exiting __attribute__((tls_model("initial-exec"))) = false;

// Owns this thread's rings; at thread exit hands them to their senders, which
// drain and free them.
struct ThreadRings {
  std::vector<std::shared_ptr<ThreadRing>> rings;
  ~ThreadRings() {
    tls_thread_exiting = true;
    for (auto& entry : tls_ring_cache) entry = RingCacheEntry{0, nullptr};
    for (auto& ring : rings) ring->MarkProducerExited();
  }
};
thread_local ThreadRings tls_rings;

uint32_t OsThreadId() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

absl::Status ValidateAddress(const std::string& address) {
  const auto bad = [&](absl::string_view expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("collector_address \"", address, "\": expected ", expected));
  };
  if (address.empty()) return bad("HOST:PORT, not an empty string");
  for (absl::string_view scheme : {"unix:", "unix-abstract:", "ipv4:", "ipv6:", "dns:"}) {
    if (absl::StartsWith(address, scheme)) {
      if (address.size() == scheme.size()) return bad("a path or address after the scheme");
      return absl::OkStatus();
    }
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bad("HOST:PORT (no port given)");
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.empty()) return bad("HOST:PORT (empty host)");
  if (host.front() == '[' ? host.back() != ']' : host.find(':') != std::string::npos) {
    return bad("HOST:PORT, with an IPv6 host in brackets ([::1]:7070)");
  }
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return bad("HOST:PORT with a port in 1..65535");
  }
  return absl::OkStatus();
}

absl::Status ValidateAndComplete(AgentOptions& options) {
  if (absl::Status s = ValidateAddress(options.collector_address); !s.ok()) return s;
  if (absl::Status s = protocol::ValidateJobId(options.job_id, "job_id"); !s.ok()) return s;
  if (options.job_token.empty()) {
    // The collector admits only ranks proving membership (by default): the
    // secret a launcher or operator put in the environment, or the one
    // derived from the job key this process' user can read.
    absl::StatusOr<std::optional<security::JobSecretSource::Found>> found =
        security::JobSecretSource::Resolve(options.job_id, security::JobSecretSource::ProcessEnv());
    if (!found.ok()) return found.status();
    if (found->has_value()) options.job_token = (*found)->secret;
  }
  if (options.world_size == 0) {
    return absl::InvalidArgumentError("world_size 0: expected at least 1");
  }
  if (options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", options.rank, ": expected less than world_size ", options.world_size));
  }
  if (options.memory_budget_bytes < kMinMemoryBudget) {
    return absl::InvalidArgumentError(absl::StrCat("memory_budget_bytes ",
                                                   options.memory_budget_bytes,
                                                   ": expected at least ", kMinMemoryBudget));
  }
  if (options.ring_capacity_events < RingRegistry::kMinRingCapacity ||
      options.ring_capacity_events > kMaxRingCapacity) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring_capacity_events ", options.ring_capacity_events, ": expected ",
                     RingRegistry::kMinRingCapacity, " .. ", kMaxRingCapacity));
  }
  options.ring_capacity_events = std::bit_ceil(options.ring_capacity_events);
  if (options.flush_interval < absl::Milliseconds(1) ||
      options.flush_interval > absl::Seconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flush_interval ", absl::FormatDuration(options.flush_interval), ": expected 1ms .. 10s"));
  }
  if (options.max_batch_events < 1 || options.max_batch_events > kMaxBatchEvents) {
    return absl::InvalidArgumentError(absl::StrCat("max_batch_events ", options.max_batch_events,
                                                   ": expected 1 .. ", kMaxBatchEvents));
  }
  if (options.reconnect_min < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reconnect_min ", absl::FormatDuration(options.reconnect_min), ": expected at least 1ms"));
  }
  if (options.reconnect_max < options.reconnect_min) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reconnect_max ", absl::FormatDuration(options.reconnect_max),
        ": expected at least reconnect_min ", absl::FormatDuration(options.reconnect_min)));
  }
  if (options.hello_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hello_timeout ", absl::FormatDuration(options.hello_timeout), ": expected more than 0"));
  }
  if (options.shutdown_deadline < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("shutdown_deadline ",
                                                   absl::FormatDuration(options.shutdown_deadline),
                                                   ": expected 0 or more"));
  }
  if (!std::isfinite(options.test_clock_drift_ppm) ||
      std::fabs(options.test_clock_drift_ppm) >= 1e6) {
    return absl::InvalidArgumentError(absl::StrCat("test_clock_drift_ppm ",
                                                   options.test_clock_drift_ppm,
                                                   ": expected a finite value in (-1e6, 1e6)"));
  }
  if (options.gpu_buffer_bytes < (64 << 10) || options.gpu_buffer_bytes > (256ull << 20)) {
    return absl::InvalidArgumentError(absl::StrCat("gpu_buffer_bytes ", options.gpu_buffer_bytes,
                                                   ": expected 65536 .. 268435456"));
  }
  if (options.gpu_max_buffers < 1 || options.gpu_max_buffers > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_max_buffers ", options.gpu_max_buffers, ": expected 1 .. 1024"));
  }
  if (options.gpu_queue_events < 64 || options.gpu_queue_events > kMaxRingCapacity) {
    return absl::InvalidArgumentError(absl::StrCat("gpu_queue_events ", options.gpu_queue_events,
                                                   ": expected 64 .. ", kMaxRingCapacity));
  }
  if (options.gpu_flush_interval < absl::Milliseconds(10) ||
      options.gpu_flush_interval > absl::Seconds(60)) {
    return absl::InvalidArgumentError(absl::StrCat("gpu_flush_interval ",
                                                   absl::FormatDuration(options.gpu_flush_interval),
                                                   ": expected 10ms .. 60s"));
  }
  if (options.gpu_operator_depth > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_operator_depth ", options.gpu_operator_depth, ": expected 0 .. 64"));
  }
  if (options.host.empty()) {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) == 0) options.host = name;
  }
  if (options.rack.empty()) options.rack = LauncherRack::FromEnvironment();
  // proto3 strings must be UTF-8: a bad byte would make every Hello unparsable.
  for (std::string* text : {&options.run_id, &options.job_token, &options.host, &options.rack,
                            &options.device, &options.framework, &options.framework_version}) {
    *text = StringTable::Sanitize(*text, 1024);
  }
  return absl::OkStatus();
}

uint64_t RandomInstanceId() {
  std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (static_cast<uint64_t>(device()) << 32) ^ device() ^ Agent::Now();
  return id;
}

int64_t RealtimeMinusMonotonic() {
  timespec realtime;
  clock_gettime(CLOCK_REALTIME, &realtime);
  const int64_t monotonic = Agent::Now();
  return static_cast<int64_t>(realtime.tv_sec) * 1000000000 + realtime.tv_nsec - monotonic;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> Agent::Start(AgentOptions options) {
  if (absl::Status s = ValidateAndComplete(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<GrpcTransport>> transport = GrpcTransport::Create(options);
  if (!transport.ok()) return transport.status();
  return StartWithTransport(std::move(options), *std::move(transport));
}

absl::StatusOr<std::unique_ptr<Agent>> Agent::StartWithTransport(
    AgentOptions options, std::unique_ptr<Transport> transport) {
  if (absl::Status s = ValidateAndComplete(options); !s.ok()) return s;
  if (transport == nullptr) return absl::InvalidArgumentError("transport: expected non-null");
  std::unique_ptr<Agent> agent(new Agent(std::move(options), std::move(transport)));
  agent->sender_->Start();
  if (agent->options_.gpu_activity) agent->StartGpuActivity();
  return agent;
}

Agent::Agent(AgentOptions options, std::unique_ptr<Transport> transport)
    : serial_(g_next_agent_serial.fetch_add(1, std::memory_order_relaxed)),
      options_(std::move(options)),
      instance_id_(RandomInstanceId()),
      strings_(std::make_unique<StringTable>(kMaxStringBytes, kMaxStrings)),
      // Rings may take half the budget; the send queue keeps the rest.
      rings_(std::make_unique<RingRegistry>(serial_, options_.ring_capacity_events,
                                            options_.memory_budget_bytes / 2)) {
  Sender::Identity identity;
  identity.instance_id = instance_id_;
  identity.realtime_minus_monotonic_ns = RealtimeMinusMonotonic();
  identity.pid = static_cast<uint32_t>(getpid());
  identity.clock_perturbation = ClockPerturbation(
      options_.test_clock_offset_ns, options_.test_clock_drift_ppm,
      options_.test_clock_origin_ns != 0 ? options_.test_clock_origin_ns : Agent::Now());
  identity.clock_domain_id = ClockDomainId::Monotonic(identity.clock_perturbation);
  if (options_.gpu_activity) {
    // Read once, before the first Hello. Without a driver the list stays
    // empty and nothing is said here (StartGpuActivity says why GPU activity is off).
    absl::StatusOr<CudaDriverApi> driver = CudaDeviceQuery::Load(options_.cuda_driver_library);
    if (driver.ok()) {
      absl::StatusOr<std::vector<v1::GpuDevice>> gpus = CudaDeviceQuery::List(*driver);
      if (gpus.ok()) identity.gpus = *std::move(gpus);
    }
  }
  std::string gpus_line;  // said once the sender can log
  for (const v1::GpuDevice& gpu : identity.gpus) {
    absl::StrAppend(&gpus_line, gpus_line.empty() ? "GPU devices: " : "; ", gpu.index(), " ",
                    gpu.name(), " (", gpu.memory_bytes() >> 20, " MiB, ", gpu.multiprocessors(),
                    " SMs, compute ", gpu.compute_capability(), ")");
  }
  Sender::AgentHooks hooks;
  hooks.apply_recording = [this](bool enabled, uint32_t sampling_period) {
    ApplyRecordingFromCollector(enabled, sampling_period);
  };
  hooks.apply_loss_contribution = [this](bool enabled, bool only_if_changed) {
    ApplyLossContributionFromCollector(enabled, only_if_changed);
  };
  hooks.apply_halt = [this](HaltInfo info) { ApplyHalt(std::move(info)); };
  hooks.recording = [this] { return recording(); };
  hooks.orphan_drops = [this] { return orphan_drops_.load(std::memory_order_relaxed); };
  sender_ = std::make_unique<Sender>(std::move(hooks), options_, identity, strings_.get(),
                                     rings_.get(), std::move(transport));
  if (!gpus_line.empty()) sender_->Log(gpus_line);
  if (options_.gpu_activity) {
    gpu_events_ = std::make_unique<GpuEventQueue>(options_.gpu_queue_events);
    sender_->set_gpu_events(gpu_events_.get());
  }
  recording_.store(options_.start_recording, std::memory_order_relaxed);
}

Agent::~Agent() {
  Shutdown(options_.shutdown_deadline);
  gpu_.reset();
  sender_.reset();
  rings_.reset();  // marks the rings agent-gone for threads that still hold them
}

StringId Agent::Intern(std::string_view text) { return strings_->Intern(text); }

bool Agent::Push(const EventRecord& record) {
  ThreadRing* ring =
      tls_ring_cache[0].agent_serial == serial_ ? tls_ring_cache[0].ring : LocalRingSlow();
  if (ring == nullptr) [[unlikely]] {
    orphan_drops_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (record.kind == EventKind::kOperator) {
    const uint32_t period = sampling_period_.load(std::memory_order_relaxed);
    if (period > 1 && ring->SampleOut(period)) return true;
  }
  ring->Push(record);
  return true;
}

const trainscope_raw_ring* Agent::LocalRawRing() {
  ThreadRing* ring =
      tls_ring_cache[0].agent_serial == serial_ ? tls_ring_cache[0].ring : LocalRingSlow();
  return ring != nullptr ? ring->raw() : nullptr;
}

ThreadRing* Agent::LocalRingSlow() {
  if (tls_thread_exiting) return nullptr;
  for (int i = 1; i < kRingCacheSize; ++i) {
    if (tls_ring_cache[i].agent_serial == serial_) {
      std::swap(tls_ring_cache[0], tls_ring_cache[i]);
      return tls_ring_cache[0].ring;
    }
  }
  try {
    ThreadRings& mine = tls_rings;
    // Rings of Agents that are gone are of no use any more.
    std::erase_if(mine.rings, [](const std::shared_ptr<ThreadRing>& ring) {
      if (!ring->agent_gone()) return false;
      for (auto& entry : tls_ring_cache) {
        if (entry.ring == ring.get()) entry = RingCacheEntry{0, nullptr};
      }
      return true;
    });
    ThreadRing* ring = nullptr;
    for (const auto& held : mine.rings) {
      if (held->agent_serial() == serial_) ring = held.get();
    }
    if (ring == nullptr) {
      std::shared_ptr<ThreadRing> created = rings_->CreateRing(OsThreadId());
      created->BindSwitches(&recording_, &sampling_period_);
      mine.rings.push_back(created);
      ring = created.get();
    }
    for (int i = kRingCacheSize - 1; i > 0; --i) tls_ring_cache[i] = tls_ring_cache[i - 1];
    tls_ring_cache[0] = RingCacheEntry{serial_, ring};
    return ring;
  } catch (...) {  // out of memory: the record is dropped and counted
    return nullptr;
  }
}

void Agent::StartGpuActivity() {
#if TRAINSCOPE_WITH_CUPTI
  absl::StatusOr<CuptiLoader::Loaded> cupti = CuptiLoader::Load(CuptiLibraryLocator::Candidates(
      CuptiLibraryLocator::FromProcess(options_.cupti_library, CuptiLoader::CompiledMajor())));
  if (!cupti.ok()) {
    sender_->Log(absl::StrCat("GPU activity off: ", cupti.status().message()));
    return;
  }
  sender_->Log(absl::StrCat(
      "GPU activity: loaded ", cupti->path, " (", cupti->why, "; CUPTI API ",
      cupti->version == 0 ? std::string("version unknown") : absl::StrCat(cupti->version), ")"));
  GpuActivityTracer::Options options;
  options.buffer_bytes = options_.gpu_buffer_bytes;
  options.max_buffers = options_.gpu_max_buffers;
  options.flush_period = options_.gpu_flush_interval;
  options.operator_depth = options_.gpu_operator_depth;
  GpuActivityTracer::Sinks sinks;
  sinks.queue = gpu_events_.get();
  sinks.intern = [this](std::string_view text) { return Intern(text); };
  sinks.recording = [this] { return recording(); };
  sinks.log = [this](const std::string& line) { sender_->Log(line); };
  sinks.now = &Agent::Now;
  absl::StatusOr<std::unique_ptr<GpuActivityTracer>> tracer =
      GpuActivityTracer::Start(cupti->api, std::move(options), std::move(sinks));
  if (!tracer.ok()) {
    sender_->Log(absl::StrCat("GPU activity off: ", tracer.status().message()));
    return;
  }
  gpu_ = *std::move(tracer);
#else
  sender_->Log(
      "GPU activity off: this agent was built without CUPTI (TRAINSCOPE_WITH_CUPTI=OFF; CMake "
      "did not find cupti.h)");
#endif
}

void Agent::GpuOperatorBegin(StringId name, uint64_t sequence) {
  if (gpu_ != nullptr) gpu_->OperatorBegin(name, sequence);
}

void Agent::GpuOperatorEnd() {
  if (gpu_ != nullptr) gpu_->OperatorEnd();
}

void Agent::GpuCollectiveBegin(StringId name, CollectiveKind kind, StringId group,
                               uint64_t group_sequence, uint64_t bytes, int32_t peer) {
  if (gpu_ == nullptr) return;
  GpuCollectiveLaunch launch;
  launch.name = name;
  launch.kind = kind;
  launch.group = group;
  launch.group_sequence = group_sequence;
  launch.bytes = bytes;
  launch.peer = peer;
  gpu_->CollectiveBegin(launch);
}

void Agent::GpuCollectiveEnd() {
  if (gpu_ != nullptr) gpu_->CollectiveEnd();
}

void Agent::GpuStepBoundary() {
  if (gpu_ != nullptr) gpu_->StepBoundary();
}

void Agent::YieldGpuActivity() {
  if (gpu_ != nullptr) gpu_->Yield();
}

void Agent::ResumeGpuActivity() {
  if (gpu_ != nullptr) gpu_->Resume();
}

bool Agent::SubmitLossReport(v1::LossReport report) {
  return sender_->SubmitLossReport(std::move(report));
}

void Agent::SetRecording(bool enabled) {
  if (shutting_down_.load()) return;
  recording_.store(enabled);
  // Shutdown may have started in between: it must win.
  if (shutting_down_.load()) recording_.store(false);
}

void Agent::SetSamplingPeriod(uint32_t period) {
  sampling_period_.store(std::max<uint32_t>(period, 1), std::memory_order_relaxed);
}

void Agent::ApplyRecordingFromCollector(bool enabled, uint32_t sampling_period) {
  SetSamplingPeriod(sampling_period);
  SetRecording(enabled);
}

void Agent::ApplyLossContributionFromCollector(bool enabled, bool only_if_changed) {
  const uint64_t current = loss_contribution_switch_.load(std::memory_order_relaxed);
  // A reconnect's HelloAck repeats the job's switch: not a new one, so that a
  // local change made since stands.
  if (only_if_changed && current != 0 && ((current & 1) != 0) == enabled) return;
  loss_contribution_switch_.store((((current >> 1) + 1) << 1) | (enabled ? 1 : 0),
                                  std::memory_order_relaxed);
}

void Agent::ApplyHalt(HaltInfo info) {
  {
    base::MutexLock lock(&halt_mu_);
    halt_info_ = info;
  }
  halt_requested_.store(true, std::memory_order_release);
  if (options_.on_halt) {
    try {
      options_.on_halt(info);
    } catch (...) {  // the user's callback must not take the reader thread down
    }
  }
}

std::optional<HaltInfo> Agent::halt_info() const {
  base::MutexLock lock(&halt_mu_);
  return halt_info_;
}

AgentStats Agent::stats() const {
  RingRegistry::Totals rings = rings_->Sum();
  const Sender::Counters sender = sender_->counters();
  AgentStats stats;
  if (gpu_events_ != nullptr) gpu_events_->AddTo(&rings);
  if (options_.gpu_activity) {
    stats.gpu_activity = GpuActivityState::kUnavailable;
    if (gpu_ != nullptr) {
      const GpuActivity::Counters gpu = gpu_->counters();
      stats.gpu_activity = gpu.state;
      stats.gpu_records_lost = gpu.records_lost;
      stats.gpu_buffers_refused = gpu.buffers_refused;
      stats.gpu_events_unresolved = gpu.unresolved;
      stats.gpu_events_out_of_order = gpu.out_of_order;
    }
  }
  stats.events_recorded = rings.recorded;
  stats.dropped_ring_full = rings.dropped_full + orphan_drops_.load(std::memory_order_relaxed);
  stats.events_sampled_out = rings.sampled_out;
  stats.dropped_buffer_full = sender.dropped_buffer_full;
  // Records still in rings once the sender stopped will never be sent.
  stats.dropped_shutdown = sender.finished ? sender.dropped_shutdown_unacked + rings.waiting : 0;
  stats.events_refused = sender.events_refused;
  stats.events_acked = sender.events_acked;
  stats.batches_sent = sender.batches_sent;
  stats.batches_acked = sender.batches_acked;
  stats.reconnects = sender.reconnects;
  stats.refusal = sender.refusal;
  stats.loss_reports_submitted = sender.loss_reports_submitted;
  stats.loss_reports_dropped = sender.loss_reports_dropped;
  stats.connected = sender.connected;
  stats.recording = recording();
  stats.halt_requested = halt_requested();
  return stats;
}

void Agent::Shutdown(absl::Duration deadline, std::string error) {
  if (shutting_down_.exchange(true)) return;
  // The last device work reaches the queue while recording still holds.
  if (gpu_ != nullptr) gpu_->Stop();
  recording_.store(false);
  sender_->Shutdown(deadline, std::move(error));
}

std::string Agent::job_token() const { return sender_->job_token(); }

}  // namespace trainscope::agent
