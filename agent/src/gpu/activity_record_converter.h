// Turns CUPTI activity records into the agent's GPU events, tying each piece
// of device work to the runtime call and the operator that launched it.
//
// Usage (the tracer, for each completed buffer, under its own lock):
//   ActivityRecordConverter converter(options, &clock, &collectives, intern, &api);
//   for each record in the buffer: converter.Add(record);
//   converter.Finish([&](const GpuEventRecord& e) { queue.Push(e); });
//
// Correlation: a kernel, copy or memset record carries the correlation id of
// the runtime/driver call that launched it (for kernels replayed from a CUDA
// graph: the cudaGraphLaunch's). The call's record gives the launch time and
// thread; the external correlation records pushed around it give the
// operator (CUSTOM0: OperatorExternalId(name, sequence)) and, for NCCL
// kernels, the collective (CUSTOM1: a CollectiveLaunchTable id). These
// records may come in any order and in different buffers, so device records
// whose launch is not known yet wait for one more Finish (at most three, and
// at most max_waiting of them) before they are sent with correlation 0
// (launch unknown), counted in stats().unresolved.
//
// Order: the collector requires each stream's events to end in order, so
// every Finish emits its device events by end time, holding back the later
// events of a stream behind one still waiting, and passes them through a
// DeviceEventReorder window (buffers CUPTI returns late); an event that would
// still end before one already sent on its stream (later than the window)
// is dropped and counted (stats().out_of_order), never sent to be refused
// with its whole batch.
//
// Runtime calls: launches and copies become kGpuRuntime events on their
// thread (its OS id through the CuptiThreadMap; value = correlation); host synchronisation comes
// from the SYNCHRONIZATION records (their type names them), so the API record of a synchronising
// call is not sent twice. Other runtime calls (cudaGetDevice and the like: most of them) only feed
// correlation.
//
// Threading: not thread-safe; one owner at a time (the tracer's mutex).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_ACTIVITY_RECORD_CONVERTER_H_
#define TRAINSCOPE_AGENT_SRC_GPU_ACTIVITY_RECORD_CONVERTER_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "gpu/collective_launch_table.h"
#include "gpu/cupti_api.h"
#include "gpu/cupti_thread_map.h"
#include "gpu/device_event_reorder.h"
#include "gpu/gpu_clock_map.h"
#include "trainscope/agent/event_record.h"

namespace trainscope::agent {

class ActivityRecordConverter {
 public:
  struct Options {
    size_t max_launches = 1 << 16;  // correlation ids remembered (oldest forgotten first)
    size_t max_waiting = 1 << 16;   // device records waiting for their launch
    // Device events are held until they end this long before the newest one
    // converted, so a buffer CUPTI returns late is still sent in order
    // (DeviceEventReorder); at most max_reorder of them.
    int64_t reorder_hold_ns = 500'000'000;
    size_t max_reorder = 1 << 17;
    // SYNCHRONIZATION records are enabled: they, not the API records of
    // synchronising calls, become the sync events.
    bool sync_records = true;
  };
  struct Stats {
    uint64_t converted = 0;     // events handed to the sink
    uint64_t unresolved = 0;    // device events sent without their launch
    uint64_t out_of_order = 0;  // dropped: would end before their stream's last event
    // Dropped: a device record without its times (start 0 or end before
    // start), which a forced flush hands over for work the device has not
    // finished; CUPTI never completes such a record later.
    uint64_t incomplete = 0;
    uint64_t other_calls = 0;    // runtime/driver calls only used for correlation
    uint64_t other_records = 0;  // records of kinds the converter does not use
  };
  using Intern = std::function<StringId(std::string_view)>;
  using Sink = std::function<void(const GpuEventRecord&)>;

  // The external correlation id of an operator: its name id (< 2^24) in the
  // top bits, the low 40 bits of its sequence number below.
  static uint64_t OperatorExternalId(StringId name, uint64_t sequence) {
    return (static_cast<uint64_t>(name & 0xFFFFFF) << 40) | (sequence & ((uint64_t{1} << 40) - 1));
  }
  static StringId OperatorNameOf(uint64_t external_id) {
    return static_cast<StringId>(external_id >> 40);
  }
  // The collective kind an NCCL kernel's name says ("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  // kUnspecified for other names. IsCollectiveKernel: the name is an NCCL kernel's.
  static bool IsCollectiveKernel(absl::string_view name);
  static CollectiveKind CollectiveKindOfKernel(absl::string_view name);
  // Demangled when it is a mangled C++ name, else as it is.
  static std::string Demangle(const char* name);
  // What a runtime or driver call is to the converter, from CUPTI's name for
  // it ("cudaLaunchKernel_ptsz_v7000": kLaunch); kOther for calls it drops.
  static RuntimeCall CallKindOfName(const char* name);

  // `clock`, `collectives` and `api` (for cuptiGetCallbackName) must outlive the converter.
  ActivityRecordConverter(Options options, const GpuClockMap* clock,
                          const CollectiveLaunchTable* collectives, Intern intern,
                          const CuptiApi* api);

  void Add(const CUpti_Activity* record);
  void Finish(const Sink& sink);
  // Sends everything still waiting (at shutdown).
  void FinishAll(const Sink& sink);
  // Sends the held device events that ended reorder_hold_ns before `now_ns`
  // (the agent's clock): the last work before the device went quiet.
  void ReleaseQuiet(int64_t now_ns, const Sink& sink);

  // Translates CUPTI's thread ids into OS thread ids (nullptr: kept as CUPTI
  // says, for tests). Must outlive the converter.
  void set_thread_map(const CuptiThreadMap* threads) { threads_ = threads; }
  // Whether SYNCHRONIZATION records come (the tracer enabled them).
  void set_sync_records(bool enabled) { sync_records_ = enabled; }

  const Stats& stats() const { return stats_; }
  size_t waiting() const { return waiting_.size(); }

 private:
  struct Launch {
    int64_t cpu_start_ns = 0;
    uint32_t thread = 0;
    bool has_call = false;
    StringId op = kEmptyString;
    uint64_t collective_id = 0;
  };
  struct Waiting {
    GpuEventRecord event;
    uint32_t correlation = 0;
    int rounds = 0;
  };
  struct CallInfo {
    StringId name = kEmptyString;
    RuntimeCall call = RuntimeCall::kOther;
  };

  uint32_t OsThread(uint32_t cupti_thread) const {
    return threads_ != nullptr ? threads_->Lookup(cupti_thread) : cupti_thread;
  }
  Launch& LaunchOf(uint32_t correlation);
  const Launch* FindLaunch(uint32_t correlation) const;
  const CallInfo& Classify(CUpti_CallbackDomain domain, uint32_t cbid);
  StringId KernelName(const char* name);
  void AddCall(const CUpti_ActivityAPI& api, CUpti_CallbackDomain domain);
  // False (and counted) for a record whose device times are not filled in.
  bool Complete(uint64_t start, uint64_t end);
  void AddKernel(const CUpti_ActivityKernel10& kernel);
  void AddDevice(GpuEventRecord event, uint32_t correlation);
  void AddSync(const CUpti_ActivitySynchronization2& sync);
  // Completes `w` from its launch (if known): a sync goes to `sink`, device
  // work to the reorder window.
  void Emit(Waiting& w, const Sink& sink);
  // Sends `e` unless it ends before its stream's last sent event (counted).
  void SendInStreamOrder(const GpuEventRecord& e, const Sink& sink);
  void FinishRounds(const Sink& sink, int min_rounds);

  const Options options_;
  bool sync_records_;
  const GpuClockMap* const clock_;
  const CollectiveLaunchTable* const collectives_;
  const Intern intern_;
  const CuptiApi* const api_;
  const CuptiThreadMap* threads_ = nullptr;
  Stats stats_;

  absl::flat_hash_map<uint32_t, Launch> launches_;
  std::deque<uint32_t> launch_order_;  // for forgetting the oldest
  std::vector<Waiting> waiting_;
  absl::flat_hash_map<uint64_t, CallInfo> calls_;  // domain << 32 | cbid
  absl::flat_hash_map<std::string, StringId> kernel_names_;
  DeviceEventReorder reorder_;
  absl::flat_hash_map<uint64_t, int64_t> last_end_;  // device << 32 | stream
  std::vector<GpuEventRecord> runtime_out_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_ACTIVITY_RECORD_CONVERTER_H_
