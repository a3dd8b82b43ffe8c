#include "gpu/activity_record_converter.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trainscope::agent {

namespace {

constexpr size_t kMaxKernelNames = 1 << 16;  // beyond: interned every time, not cached

uint64_t StreamKey(const GpuEventRecord& e) {
  return (static_cast<uint64_t>(e.device) << 32) | e.stream;
}

CopyKind CopyKindOf(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return CopyKind::kHostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return CopyKind::kDeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return CopyKind::kDeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return CopyKind::kHostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return CopyKind::kPeerToPeer;
    default:
      return CopyKind::kUnspecified;
  }
}

// "cudaLaunchKernel_ptsz_v7000" -> "cudaLaunchKernel".
std::string CallName(std::string name) {
  if (const size_t v = name.rfind("_v");
      v != std::string::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + v + 2, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    name.resize(v);
  }
  for (absl::string_view suffix : {"_ptsz", "_ptds"}) {
    if (absl::EndsWith(name, suffix)) name.resize(name.size() - suffix.size());
  }
  return name;
}

RuntimeCall CallKind(absl::string_view name) {
  while (absl::StartsWith(name, "_")) name.remove_prefix(1);
  for (absl::string_view launch : {"cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch"}) {
    if (absl::StartsWith(name, launch)) return RuntimeCall::kLaunch;
  }
  for (absl::string_view copy : {"cudaMemcpy", "cudaMemset", "cuMemcpy", "cuMemset"}) {
    if (absl::StartsWith(name, copy)) return RuntimeCall::kCopy;
  }
  if (absl::StrContains(name, "Synchronize")) return RuntimeCall::kSync;
  return RuntimeCall::kOther;
}

}  // namespace

bool ActivityRecordConverter::IsCollectiveKernel(absl::string_view name) {
  return absl::StrContains(name, "ncclDevKernel_") || absl::StrContains(name, "ncclKernel_");
}

CollectiveKind ActivityRecordConverter::CollectiveKindOfKernel(absl::string_view name) {
  if (!IsCollectiveKernel(name)) return CollectiveKind::kUnspecified;
  // Longest names first: "ReduceScatter" before "Reduce", "AllReduce".
  static constexpr std::pair<absl::string_view, CollectiveKind> kNames[] = {
      {"ReduceScatter", CollectiveKind::kReduceScatter},
      {"AllReduce", CollectiveKind::kAllReduce},
      {"AllGather", CollectiveKind::kAllGather},
      {"AllToAll", CollectiveKind::kAllToAll},
      {"Broadcast", CollectiveKind::kBroadcast},
      {"SendRecv", CollectiveKind::kUnspecified},  // the direction is not in the name
      {"Send", CollectiveKind::kSend},
      {"Recv", CollectiveKind::kRecv},
      {"Reduce", CollectiveKind::kReduce},
  };
  for (const auto& [word, kind] : kNames) {
    if (absl::StrContains(name, absl::StrCat("_", word))) return kind;
  }
  return CollectiveKind::kUnspecified;
}

RuntimeCall ActivityRecordConverter::CallKindOfName(const char* name) {
  return CallKind(CallName(name));
}

std::string ActivityRecordConverter::Demangle(const char* name) {
  if (name == nullptr) return "";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && demangled != nullptr ? std::string(demangled.get()) : std::string(name);
}

ActivityRecordConverter::ActivityRecordConverter(Options options, const GpuClockMap* clock,
                                                 const CollectiveLaunchTable* collectives,
                                                 Intern intern, const CuptiApi* api)
    : options_([&] {
        options.max_launches = std::max<size_t>(options.max_launches, 1);
        return options;
      }()),
      sync_records_(options.sync_records),
      clock_(clock),
      collectives_(collectives),
      intern_(std::move(intern)),
      api_(api),
      reorder_(options_.reorder_hold_ns, options_.max_reorder) {}

ActivityRecordConverter::Launch& ActivityRecordConverter::LaunchOf(uint32_t correlation) {
  auto [it, inserted] = launches_.try_emplace(correlation);
  if (inserted) {
    launch_order_.push_back(correlation);
    // Forgets the oldest; never the one just added (max_launches >= 1), and
    // erasing others leaves `it` valid.
    while (launch_order_.size() > options_.max_launches) {
      launches_.erase(launch_order_.front());
      launch_order_.pop_front();
    }
  }
  return it->second;
}

const ActivityRecordConverter::Launch* ActivityRecordConverter::FindLaunch(
    uint32_t correlation) const {
  auto it = launches_.find(correlation);
  return it == launches_.end() ? nullptr : &it->second;
}

const ActivityRecordConverter::CallInfo& ActivityRecordConverter::Classify(
    CUpti_CallbackDomain domain, uint32_t cbid) {
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  auto it = calls_.find(key);
  if (it != calls_.end()) return it->second;
  const char* raw = nullptr;
  std::string name;
  if (api_ != nullptr && api_->get_callback_name != nullptr &&
      api_->get_callback_name(domain, cbid, &raw) == CUPTI_SUCCESS && raw != nullptr) {
    name = CallName(raw);
  } else {
    name =
        absl::StrCat(domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", " call ", cbid);
  }
  CallInfo info;
  info.call = CallKind(name);
  info.name = info.call == RuntimeCall::kOther ? kEmptyString : intern_(name);
  return calls_.emplace(key, info).first->second;
}

StringId ActivityRecordConverter::KernelName(const char* name) {
  if (name == nullptr) return kEmptyString;
  auto it = kernel_names_.find(name);
  if (it != kernel_names_.end()) return it->second;
  const StringId id = intern_(Demangle(name));
  if (kernel_names_.size() < kMaxKernelNames) kernel_names_.emplace(name, id);
  return id;
}

void ActivityRecordConverter::Add(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      AddCall(*reinterpret_cast<const CUpti_ActivityAPI*>(record), CUPTI_CB_DOMAIN_RUNTIME_API);
      return;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      AddCall(*reinterpret_cast<const CUpti_ActivityAPI*>(record), CUPTI_CB_DOMAIN_DRIVER_API);
      return;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& ext = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (ext.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
        LaunchOf(ext.correlationId).op = OperatorNameOf(ext.externalId);
      } else if (ext.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) {
        LaunchOf(ext.correlationId).collective_id = ext.externalId;
      } else {
        ++stats_.other_records;  // another tool's kind
      }
      return;
    }
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      AddKernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      return;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& copy = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (!Complete(copy.start, copy.end)) return;
      GpuEventRecord e;
      e.event.kind = EventKind::kGpuMemcpy;
      e.event.start_ns = clock_->ToAgent(copy.start);
      e.event.end_ns = clock_->ToAgent(copy.end);
      e.event.value = copy.bytes;
      e.event.detail = static_cast<uint16_t>(CopyKindOf(copy.copyKind));
      e.device = copy.deviceId;
      e.stream = copy.streamId;
      AddDevice(e, copy.correlationId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& set = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (!Complete(set.start, set.end)) return;
      GpuEventRecord e;
      e.event.kind = EventKind::kGpuMemset;
      e.event.start_ns = clock_->ToAgent(set.start);
      e.event.end_ns = clock_->ToAgent(set.end);
      e.event.value = set.bytes;
      e.device = set.deviceId;
      e.stream = set.streamId;
      AddDevice(e, set.correlationId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      AddSync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
      return;
    default:
      ++stats_.other_records;
      return;
  }
}

void ActivityRecordConverter::AddCall(const CUpti_ActivityAPI& api, CUpti_CallbackDomain domain) {
  const CallInfo& info = Classify(domain, api.cbid);
  if (info.call == RuntimeCall::kOther) {
    // Nothing it launched will ask; forget what its external correlation said.
    launches_.erase(api.correlationId);
    ++stats_.other_calls;
    return;
  }
  Launch& launch = LaunchOf(api.correlationId);
  launch.cpu_start_ns = clock_->ToAgent(api.start);
  launch.thread = OsThread(api.threadId);
  launch.has_call = true;
  if (info.call == RuntimeCall::kSync && sync_records_) return;
  GpuEventRecord e;
  e.event.kind = EventKind::kGpuRuntime;
  e.event.name = info.name;
  e.event.start_ns = launch.cpu_start_ns;
  e.event.end_ns = clock_->ToAgent(api.end);
  e.event.value = api.correlationId;
  e.event.detail = static_cast<uint16_t>(info.call);
  e.thread = launch.thread;
  runtime_out_.push_back(e);
}

bool ActivityRecordConverter::Complete(uint64_t start, uint64_t end) {
  if (start != 0 && end >= start) return true;
  ++stats_.incomplete;
  return false;
}

void ActivityRecordConverter::AddKernel(const CUpti_ActivityKernel10& kernel) {
  if (!Complete(kernel.start, kernel.end)) return;
  GpuEventRecord e;
  e.event.name = KernelName(kernel.name);
  e.event.start_ns = clock_->ToAgent(kernel.start);
  e.event.end_ns = clock_->ToAgent(kernel.end);
  e.device = kernel.deviceId;
  e.stream = kernel.streamId;
  if (kernel.name != nullptr && IsCollectiveKernel(kernel.name)) {
    e.event.kind = EventKind::kGpuCollective;
    e.event.detail = static_cast<uint16_t>(CollectiveKindOfKernel(kernel.name));
  } else {
    e.event.kind = EventKind::kGpuKernel;
  }
  // A kernel replayed from a CUDA graph carries the cudaGraphLaunch's
  // correlation id, so it is tied to the graph launch and its operator.
  AddDevice(e, kernel.correlationId);
}

void ActivityRecordConverter::AddDevice(GpuEventRecord event, uint32_t correlation) {
  waiting_.push_back(Waiting{event, correlation, 0});
}

void ActivityRecordConverter::AddSync(const CUpti_ActivitySynchronization2& sync) {
  if (!Complete(sync.start, sync.end)) return;
  const char* name = nullptr;
  switch (sync.type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      name = "cudaEventSynchronize";
      break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      name = "cudaStreamSynchronize";
      break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      name = "cudaDeviceSynchronize";
      break;
    default:  // a stream waiting for an event: the device waits, not the host
      ++stats_.other_records;
      return;
  }
  GpuEventRecord e;
  e.event.kind = EventKind::kGpuRuntime;
  e.event.name = intern_(name);
  e.event.start_ns = clock_->ToAgent(sync.start);
  e.event.end_ns = clock_->ToAgent(sync.end);
  e.event.value = sync.correlationId;
  e.event.detail = static_cast<uint16_t>(RuntimeCall::kSync);
  waiting_.push_back(Waiting{e, sync.correlationId, 0});
}

void ActivityRecordConverter::Emit(Waiting& w, const Sink& sink) {
  GpuEventRecord& e = w.event;
  const Launch* launch = FindLaunch(w.correlation);
  const bool known = launch != nullptr && launch->has_call;
  if (e.event.kind == EventKind::kGpuRuntime) {  // a sync: needs only its thread
    if (known) e.thread = launch->thread;
    sink(e);
    ++stats_.converted;
    return;
  }
  if (known) {
    e.correlation = w.correlation;
    e.launch_delta_ns = std::min<int64_t>(launch->cpu_start_ns - e.event.start_ns, 0);
    e.launch_op = launch->op;
    if (e.event.kind == EventKind::kGpuCollective && collectives_ != nullptr) {
      if (std::optional<GpuCollectiveLaunch> c = collectives_->Lookup(launch->collective_id)) {
        e.event.group = c->group;
        e.event.aux = c->group_sequence;
        e.event.peer = c->peer;
        e.event.value = c->bytes;
        if (c->kind != CollectiveKind::kUnspecified)
          e.event.detail = static_cast<uint16_t>(c->kind);
      }
    }
  } else {
    ++stats_.unresolved;
  }
  reorder_.Add(e);
}

void ActivityRecordConverter::SendInStreamOrder(const GpuEventRecord& e, const Sink& sink) {
  auto [it, inserted] = last_end_.try_emplace(StreamKey(e), e.event.end_ns);
  if (!inserted) {
    if (e.event.end_ns < it->second) {
      ++stats_.out_of_order;
      return;
    }
    it->second = e.event.end_ns;
  }
  sink(e);
  ++stats_.converted;
}

void ActivityRecordConverter::FinishRounds(const Sink& sink, int max_rounds) {
  for (const GpuEventRecord& e : runtime_out_) {
    sink(e);
    ++stats_.converted;
  }
  runtime_out_.clear();
  std::stable_sort(waiting_.begin(), waiting_.end(), [](const Waiting& a, const Waiting& b) {
    return a.event.event.end_ns < b.event.event.end_ns;
  });
  absl::flat_hash_set<uint64_t> blocked;  // streams with an earlier event held back
  std::vector<Waiting> keep;
  for (Waiting& w : waiting_) {
    ++w.rounds;
    const bool device = w.event.event.kind != EventKind::kGpuRuntime;
    const Launch* launch = FindLaunch(w.correlation);
    const bool known = launch != nullptr && launch->has_call;
    const bool hold =
        w.rounds < max_rounds && (!known || (device && blocked.contains(StreamKey(w.event))));
    if (hold) {
      if (device) blocked.insert(StreamKey(w.event));
      keep.push_back(w);
      continue;
    }
    Emit(w, sink);
  }
  // Bounded: the earliest-ending held records go now (each stream's held
  // records are in end order, so its order is kept).
  size_t send = keep.size() > options_.max_waiting ? keep.size() - options_.max_waiting : 0;
  for (size_t i = 0; i < send; ++i) Emit(keep[i], sink);
  waiting_.assign(keep.begin() + static_cast<std::ptrdiff_t>(send), keep.end());
  const auto in_order = [&](const GpuEventRecord& e) { SendInStreamOrder(e, sink); };
  if (max_rounds == 0) {
    reorder_.ReleaseAll(in_order);
  } else {
    reorder_.Release(in_order);
  }
}

void ActivityRecordConverter::Finish(const Sink& sink) { FinishRounds(sink, 3); }

void ActivityRecordConverter::FinishAll(const Sink& sink) { FinishRounds(sink, 0); }

void ActivityRecordConverter::ReleaseQuiet(int64_t now_ns, const Sink& sink) {
  reorder_.ReleaseEndedBefore(now_ns - options_.reorder_hold_ns,
                              [&](const GpuEventRecord& e) { SendInStreamOrder(e, sink); });
}

}  // namespace trainscope::agent
