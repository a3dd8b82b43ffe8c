// The CUPTI path on a real GPU, end to end, without torch: loads libcupti as
// the agent does, starts GpuActivityTracer, runs copies, a memset, kernels
// (driver-API launches of PTX), a kernel named like an NCCL one inside a
// collective, a CUDA graph replay and a device sync, each inside an
// "operator", then checks what came out: every piece of device work tied to
// its launch and operator, on the agent's clock within the run's window; the
// collective with its group and sequence; the graph's kernels on the graph
// launch; and, with a second CUPTI subscriber standing in for torch.profiler,
// the yield and the resume. The shared-library build also exports
// trainscope_probe_{start,state,kernels,report,yield,resume,stop} for
// scripts that run the tracer beside torch.profiler. Prints one line per check and the cost of an
// operator's correlation push/pop; exit status 0 only when every check holds.
//
// Usage (a machine with an NVIDIA driver; libcudart.so.13 found by dlopen or
// in $TRAINSCOPE_PROBE_CUDART; libcupti as the agent finds it, e.g. with
// TRAINSCOPE_CUPTI_LIBRARY):
//   cupti_device_probe
// or inside a torch process, from the shared-library build:
//   python3 -c "import torch, ctypes; torch.zeros(1, device='cuda');
//               exit(ctypes.CDLL('./libcupti_device_probe.so').trainscope_cupti_probe())"
// Both builds (standalone, static absl and libstdc++, for a machine without
// the build's libraries):
//   g++ -O2 -std=c++20 -DTRAINSCOPE_WITH_CUPTI=1 -Iagent/include -Iagent/src -Itests/agent \
//     -Ibase/include -isystem /usr/local/cuda/include tests/agent/gpu/cupti_device_probe.cc \
//     agent/src/gpu/{cupti_library_locator,cupti_loader,cupti_thread_map,gpu_activity_tracer,\
//     activity_record_converter,activity_buffer_pool,gpu_clock_map,gpu_event_queue,\
//     collective_launch_table}.cc -static-libstdc++ -static-libgcc \
//     -Wl,--start-group /usr/lib/x86_64-linux-gnu/libabsl_*.a -Wl,--end-group -ldl -lpthread \
//     -o cupti_device_probe   # or: -fPIC -shared -DTRAINSCOPE_PROBE_LIBRARY -o libcupti_device_probe.so
// Built with the agent's tests when CUPTI is (so it cannot rot); it needs no
// CUDA library at build time beyond the headers.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpu/cupti_library_locator.h"
#include "gpu/cupti_loader.h"
#include "gpu/gpu_activity_tracer.h"
#include "gpu/gpu_event_queue.h"
#include "gpu/probe_kernels_ptx.h"
#include "trainscope/agent/agent.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {
namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// The CUDA entry points the probe uses, from the driver and the runtime.
struct Cuda {
  int (*cuModuleLoadData)(void** module, const void* image) = nullptr;
  int (*cuModuleGetFunction)(void** function, void* module, const char* name) = nullptr;
  int (*cuLaunchKernel)(void* f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void* stream, void** params, void** extra) = nullptr;
  int (*cudaFree)(void*) = nullptr;
  int (*cudaMalloc)(void**, size_t) = nullptr;
  int (*cudaMemcpy)(void*, const void*, size_t, int) = nullptr;
  int (*cudaMemsetAsync)(void*, int, size_t, void*) = nullptr;
  int (*cudaDeviceSynchronize)() = nullptr;
  int (*cudaStreamCreate)(void**) = nullptr;
  int (*cudaStreamBeginCapture)(void*, int) = nullptr;
  int (*cudaStreamEndCapture)(void*, void**) = nullptr;
  int (*cudaGraphInstantiate)(void**, void*, unsigned long long) = nullptr;
  int (*cudaGraphLaunch)(void*, void*) = nullptr;
  int (*cudaStreamSynchronize)(void*) = nullptr;
};

template <typename Fn>
bool Sym(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (*fn == nullptr) std::printf("missing symbol %s\n", name);
  return *fn != nullptr;
}

bool LoadCuda(Cuda* c) {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  const char* cudart_path = std::getenv("TRAINSCOPE_PROBE_CUDART");
  void* runtime = ::dlopen(cudart_path != nullptr ? cudart_path : "libcudart.so.13",
                           RTLD_NOW | RTLD_GLOBAL);
  if (driver == nullptr || runtime == nullptr) {
    std::printf("cannot load libcuda.so.1 / libcudart.so.13: %s\n", ::dlerror());
    return false;
  }
  return Sym(driver, "cuModuleLoadData", &c->cuModuleLoadData) &&
         Sym(driver, "cuModuleGetFunction", &c->cuModuleGetFunction) &&
         Sym(driver, "cuLaunchKernel", &c->cuLaunchKernel) &&
         Sym(runtime, "cudaFree", &c->cudaFree) && Sym(runtime, "cudaMalloc", &c->cudaMalloc) &&
         Sym(runtime, "cudaMemcpy", &c->cudaMemcpy) &&
         Sym(runtime, "cudaMemsetAsync", &c->cudaMemsetAsync) &&
         Sym(runtime, "cudaDeviceSynchronize", &c->cudaDeviceSynchronize) &&
         Sym(runtime, "cudaStreamCreate", &c->cudaStreamCreate) &&
         Sym(runtime, "cudaStreamBeginCapture", &c->cudaStreamBeginCapture) &&
         Sym(runtime, "cudaStreamEndCapture", &c->cudaStreamEndCapture) &&
         Sym(runtime, "cudaGraphInstantiate", &c->cudaGraphInstantiate) &&
         Sym(runtime, "cudaGraphLaunch", &c->cudaGraphLaunch) &&
         Sym(runtime, "cudaStreamSynchronize", &c->cudaStreamSynchronize);
}

// The probe's string table.
class Strings {
 public:
  StringId Intern(std::string_view text) {
    base::MutexLock lock(&mu_);
    auto [it, inserted] = ids_.try_emplace(std::string(text), static_cast<StringId>(texts_.size()));
    if (inserted) texts_.emplace_back(text);
    return it->second;
  }
  std::string Text(StringId id) {
    base::MutexLock lock(&mu_);
    return id < texts_.size() ? texts_[id] : "?";
  }

 private:
  base::Mutex mu_;
  std::vector<std::string> texts_ ABSL_GUARDED_BY(mu_){""};
  std::map<std::string, StringId> ids_ ABSL_GUARDED_BY(mu_){{"", 0}};
};

void IgnoreCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

int Run() {
  const int64_t t0 = Agent::Now();
  absl::StatusOr<CuptiLoader::Loaded> cupti = CuptiLoader::Load(CuptiLibraryLocator::Candidates(
      CuptiLibraryLocator::FromProcess("", CuptiLoader::CompiledMajor())));
  if (!cupti.ok()) {
    std::printf("FAIL loading CUPTI: %s\n", std::string(cupti.status().message()).c_str());
    return 1;
  }
  std::printf("loaded %s (%s), CUPTI API %u\n", cupti->path.c_str(), cupti->why.c_str(),
              cupti->version);
  Cuda cuda;
  if (!LoadCuda(&cuda)) return 1;
  Check(cuda.cudaFree(nullptr) == 0, "CUDA initialises");

  Strings strings;
  GpuEventQueue queue(1 << 16);
  GpuActivityTracer::Options options;
  options.flush_period = absl::Milliseconds(100);
  GpuActivityTracer::Sinks sinks;
  sinks.queue = &queue;
  sinks.intern = [&](std::string_view text) { return strings.Intern(text); };
  sinks.log = [](const std::string& line) { std::printf("tracer: %s\n", line.c_str()); };
  sinks.now = &Agent::Now;
  auto started = GpuActivityTracer::Start(cupti->api, options, sinks);
  if (!started.ok()) {
    std::printf("FAIL %s\n", std::string(started.status().message()).c_str());
    return 1;
  }
  GpuActivityTracer& tracer = **started;
  Check(tracer.counters().state == GpuActivityState::kActive, "the tracer holds CUPTI");
  std::printf("clock: agent - cupti = %lld ns (+- %lld)\n",
              static_cast<long long>(tracer.clock().offset_ns()),
              static_cast<long long>(tracer.clock().uncertainty_ns()));

  void* module = nullptr;
  void* spin = nullptr;
  void* nccl = nullptr;
  Check(cuda.cuModuleLoadData(&module, kProbeKernelsPtx) == 0 &&
            cuda.cuModuleGetFunction(&spin, module, "trainscope_probe_spin") == 0 &&
            cuda.cuModuleGetFunction(&nccl, module, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == 0,
        "PTX module loads");
  constexpr int kN = 1 << 16;
  std::vector<float> host(kN, 1.0f);
  void* device = nullptr;
  Check(cuda.cudaMalloc(&device, kN * sizeof(float)) == 0, "cudaMalloc");
  int n = kN;
  int iters = 2000;
  void* params[] = {&device, &n, &iters};
  const uint32_t tid = static_cast<uint32_t>(::syscall(SYS_gettid));

  const StringId copy_in = strings.Intern("aten::copy_ (in)");
  const StringId fill = strings.Intern("aten::fill_");
  const StringId spin_op = strings.Intern("aten::spin");
  const StringId allreduce = strings.Intern("c10d::allreduce_");
  const StringId replay = strings.Intern("CUDAGraph::replay");
  const StringId copy_out = strings.Intern("aten::copy_ (out)");
  const StringId pg = strings.Intern("pg0");

  tracer.OperatorBegin(copy_in, 1);
  cuda.cudaMemcpy(device, host.data(), kN * sizeof(float), /*HostToDevice=*/1);
  tracer.OperatorEnd();
  tracer.OperatorBegin(fill, 2);
  cuda.cudaMemsetAsync(device, 0, kN * sizeof(float), nullptr);
  tracer.OperatorEnd();
  tracer.OperatorBegin(spin_op, 3);
  for (int i = 0; i < 5; ++i) cuda.cuLaunchKernel(spin, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
  tracer.OperatorEnd();
  tracer.OperatorBegin(allreduce, 4);
  GpuCollectiveLaunch launch;
  launch.name = allreduce;
  launch.kind = CollectiveKind::kAllReduce;
  launch.group = pg;
  launch.group_sequence = 7;
  launch.bytes = kN * sizeof(float);
  tracer.CollectiveBegin(launch);
  cuda.cuLaunchKernel(nccl, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
  tracer.CollectiveEnd();
  tracer.OperatorEnd();

  void* stream = nullptr;
  void* graph = nullptr;
  void* exec = nullptr;
  cuda.cudaStreamCreate(&stream);
  cuda.cudaStreamBeginCapture(stream, /*cudaStreamCaptureModeGlobal=*/0);
  for (int i = 0; i < 3; ++i) cuda.cuLaunchKernel(spin, kN / 256, 1, 1, 256, 1, 1, 0, stream, params, nullptr);
  cuda.cudaStreamEndCapture(stream, &graph);
  Check(cuda.cudaGraphInstantiate(&exec, graph, 0) == 0, "CUDA graph instantiates");
  tracer.OperatorBegin(replay, 5);
  cuda.cudaGraphLaunch(exec, stream);
  tracer.OperatorEnd();
  cuda.cudaStreamSynchronize(stream);
  cuda.cudaDeviceSynchronize();
  tracer.OperatorBegin(copy_out, 6);
  cuda.cudaMemcpy(host.data(), device, kN * sizeof(float), /*DeviceToHost=*/2);
  tracer.OperatorEnd();
  const int64_t t1 = Agent::Now();

  tracer.StepBoundary();  // the worker flushes soon
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  tracer.RunWorkerTurnForTest();

  std::vector<GpuEventRecord> events;
  queue.Consume(1 << 20, [&](const GpuEventRecord& e) { events.push_back(e); });
  std::map<EventKind, int> kinds;
  int spin_kernels = 0, graph_kernels = 0, attributed = 0, device_events = 0, in_window = 0;
  int launches = 0, syncs = 0, h2d = 0, d2h = 0, memsets = 0, collectives_ok = 0;
  int64_t worst_delta = 0;
  for (const GpuEventRecord& e : events) {
    ++kinds[e.event.kind];
    if (e.event.kind == EventKind::kGpuRuntime) {
      launches += e.event.detail == static_cast<uint16_t>(RuntimeCall::kLaunch) && e.thread == tid;
      syncs += e.event.detail == static_cast<uint16_t>(RuntimeCall::kSync) && e.thread == tid;
      continue;
    }
    ++device_events;
    in_window += e.event.start_ns >= t0 && e.event.end_ns <= t1 + 5'000'000 &&
                 e.event.start_ns <= e.event.end_ns;
    if (e.correlation != 0) {
      ++attributed;
      worst_delta = std::min(worst_delta, e.launch_delta_ns);
    }
    const std::string op = strings.Text(e.launch_op);
    if (e.event.kind == EventKind::kGpuKernel && strings.Text(e.event.name) == "trainscope_probe_spin") {
      spin_kernels += op == "aten::spin";
      graph_kernels += op == "CUDAGraph::replay";
    }
    if (e.event.kind == EventKind::kGpuCollective) {
      collectives_ok += e.event.group == pg && e.event.aux == 7 &&
                        e.event.value == kN * sizeof(float) && op == "c10d::allreduce_" &&
                        e.event.detail == static_cast<uint16_t>(CollectiveKind::kAllReduce);
    }
    if (e.event.kind == EventKind::kGpuMemcpy) {
      h2d += e.event.detail == static_cast<uint16_t>(CopyKind::kHostToDevice) &&
             op == "aten::copy_ (in)" && e.event.value == kN * sizeof(float);
      d2h += e.event.detail == static_cast<uint16_t>(CopyKind::kDeviceToHost) &&
             op == "aten::copy_ (out)";
    }
    if (e.event.kind == EventKind::kGpuMemset) memsets += op == "aten::fill_";
  }
  for (const GpuEventRecord& e : events) {
    if (e.event.kind != EventKind::kGpuRuntime) continue;
    std::printf("runtime call thread %u; this thread: gettid %u, pthread_self %lu (low 32 bits %u)\n",
                e.thread, tid, static_cast<unsigned long>(pthread_self()),
                static_cast<uint32_t>(pthread_self()));
    break;
  }
  std::printf("events: %zu (kernels %d, collectives %d, copies %d, memsets %d, runtime %d)\n",
              events.size(), kinds[EventKind::kGpuKernel], kinds[EventKind::kGpuCollective],
              kinds[EventKind::kGpuMemcpy], kinds[EventKind::kGpuMemset],
              kinds[EventKind::kGpuRuntime]);
  Check(spin_kernels == 5, "5 kernels attributed to aten::spin (" + std::to_string(spin_kernels) + ")");
  Check(graph_kernels == 3,
        "3 graph kernels attributed to the graph launch's operator (" + std::to_string(graph_kernels) + ")");
  Check(collectives_ok == 1, "the NCCL-named kernel is a collective with group, sequence, bytes");
  Check(h2d == 1 && d2h == 1, "H2D and D2H copies with their operators");
  Check(memsets == 1, "the memset with its operator");
  Check(attributed == device_events, "every device event has its launch (" +
                                         std::to_string(attributed) + "/" +
                                         std::to_string(device_events) + ")");
  Check(in_window == device_events,
        "device times on the agent's clock, inside the run (" + std::to_string(in_window) + "/" +
            std::to_string(device_events) + ")");
  Check(worst_delta > -2'000'000'000, "launch deltas <= 0 and under 2 s (worst " +
                                          std::to_string(worst_delta) + " ns)");
  Check(launches >= 10, "launch calls on this thread (" + std::to_string(launches) + ")");
  Check(syncs >= 1, "host syncs on this thread (" + std::to_string(syncs) + ")");

  // Another client (torch.profiler's place) subscribes after a Yield and
  // keeps its subscription, as Kineto does; Resume takes the activity API
  // back anyway and the tracer records again.
  CUpti_SubscriberHandle other = nullptr;
  tracer.Yield();
  Check(cupti->api.subscribe(&other, &IgnoreCallback, nullptr) == CUPTI_SUCCESS,
        "another client can subscribe (the tracer keeps no subscription)");
  tracer.Resume();
  Check(tracer.counters().state == GpuActivityState::kActive,
        "Resume on request takes the activity API back though the other client stays subscribed");
  cupti->api.unsubscribe(other);
  tracer.OperatorBegin(spin_op, 7);
  cuda.cuLaunchKernel(spin, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
  tracer.OperatorEnd();
  cuda.cudaDeviceSynchronize();
  tracer.RunWorkerTurnForTest();
  int after = 0;
  queue.Consume(1 << 20, [&](const GpuEventRecord& e) {
    after += e.event.kind == EventKind::kGpuKernel && strings.Text(e.launch_op) == "aten::spin";
  });
  Check(after == 1, "a kernel after resuming is recorded with its operator");

  // What an operator costs the training thread while active.
  constexpr int kPairs = 200000;
  const int64_t a = Agent::Now();
  for (int i = 0; i < kPairs; ++i) {
    tracer.OperatorBegin(spin_op, i);
    tracer.OperatorEnd();
  }
  const int64_t b = Agent::Now();
  std::printf("operator correlation push+pop: %.1f ns per operator\n",
              static_cast<double>(b - a) / kPairs);
  const GpuActivity::Counters counters = tracer.counters();
  std::printf("lost %llu, refused buffers %llu, unresolved %llu, out of order %llu\n",
              static_cast<unsigned long long>(counters.records_lost),
              static_cast<unsigned long long>(counters.buffers_refused),
              static_cast<unsigned long long>(counters.unresolved),
              static_cast<unsigned long long>(counters.out_of_order));
  tracer.Stop();
  std::printf("%s: %d check(s) failed\n", failures == 0 ? "OK" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace trainscope::agent

// Also built as a shared library (-DTRAINSCOPE_PROBE_LIBRARY) so it can run
// inside a Python process that imported torch: then it finds the CUPTI and
// libcudart of torch's pip packages, as the plugin's agent does.
#ifdef TRAINSCOPE_PROBE_LIBRARY
extern "C" int trainscope_cupti_probe() { return trainscope::agent::Run(); }

// A tracer that stays up while Python runs torch (and torch.profiler) around
// it: start, ask its state (GpuActivityState as int), flush and count what
// arrived, stop.
namespace {
struct Live {
  trainscope::agent::GpuEventQueue queue{1 << 20};
  std::unique_ptr<trainscope::agent::GpuActivityTracer> tracer;
  uint64_t kernels = 0;
};
Live* live = nullptr;
}  // namespace

extern "C" int trainscope_probe_start() {
  using namespace trainscope::agent;
  auto cupti = CuptiLoader::Load(CuptiLibraryLocator::Candidates(
      CuptiLibraryLocator::FromProcess("", CuptiLoader::CompiledMajor())));
  if (!cupti.ok()) return -1;
  live = new Live;
  GpuActivityTracer::Options options;
  options.flush_period = absl::Milliseconds(50);
  GpuActivityTracer::Sinks sinks;
  sinks.queue = &live->queue;
  sinks.intern = [](std::string_view) { return StringId{1}; };
  sinks.log = [](const std::string& line) { std::printf("tracer: %s\n", line.c_str()); };
  sinks.now = &Agent::Now;
  auto tracer = GpuActivityTracer::Start(cupti->api, options, sinks);
  if (!tracer.ok()) return -2;
  live->tracer = *std::move(tracer);
  return static_cast<int>(live->tracer->counters().state);
}

extern "C" int trainscope_probe_state() {
  return live == nullptr ? -1 : static_cast<int>(live->tracer->counters().state);
}

// Flushes, then returns the kernels received since the last call.
extern "C" long trainscope_probe_kernels() {
  if (live == nullptr) return -1;
  live->tracer->RunWorkerTurnForTest();
  long kernels = 0;
  live->queue.Consume(1 << 20, [&](const trainscope::agent::GpuEventRecord& e) {
    kernels += e.event.kind == trainscope::agent::EventKind::kGpuKernel;
  });
  return kernels;
}

// What the tracer has seen since the last call, as one line.
extern "C" void trainscope_probe_report() {
  if (live == nullptr) return;
  live->tracer->RunWorkerTurnForTest();
  std::map<int, long> kinds;
  live->queue.Consume(1 << 20, [&](const trainscope::agent::GpuEventRecord& e) {
    ++kinds[static_cast<int>(e.event.kind)];
  });
  const auto c = live->tracer->counters();
  std::printf("  report: state %d lost %llu refused %llu pool in use %zu allocated %zu; kinds:",
              static_cast<int>(c.state), static_cast<unsigned long long>(c.records_lost),
              static_cast<unsigned long long>(c.buffers_refused), live->tracer->pool().in_use(),
              live->tracer->pool().allocated());
  for (auto [kind, n] : kinds) std::printf(" %d:%ld", kind, n);
  std::printf("\n");
  std::fflush(stdout);
}

extern "C" void trainscope_probe_yield() { live->tracer->Yield(); }
extern "C" void trainscope_probe_resume() { live->tracer->Resume(); }
extern "C" void trainscope_probe_stop() { live->tracer->Stop(); }
#else
int main() { return trainscope::agent::Run(); }
#endif
