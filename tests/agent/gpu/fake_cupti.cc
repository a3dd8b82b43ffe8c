#include "gpu/fake_cupti.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

using B = SyntheticActivityBuffer;

FakeCupti* fake = nullptr;  // CUPTI's entries are plain function pointers

}  // namespace

FakeCupti::FakeCupti() { fake = this; }

FakeCupti::~FakeCupti() { fake = nullptr; }

CUptiResult CUPTIAPI FakeCupti::GetVersion(uint32_t* v) {
  *v = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::ResultString(CUptiResult r, const char** text) {
  *text = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
              : "CUPTI_ERROR_SOMETHING";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc,
                                          void*) {
  ++fake->subscribes;
  if (fake->subscribe != CUPTI_SUCCESS) return fake->subscribe;
  if (fake->subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake->subscribed = true;
  *handle = reinterpret_cast<CUpti_SubscriberHandle>(fake);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Unsubscribe(CUpti_SubscriberHandle) {
  ++fake->unsubscribes;
  fake->subscribed = false;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Register(CUpti_BuffersCallbackRequestFunc requested,
                                         CUpti_BuffersCallbackCompleteFunc completed) {
  fake->requested = requested;
  fake->completed = completed;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Enable(CUpti_ActivityKind kind) {
  auto it = fake->enable.find(kind);
  if (it != fake->enable.end() && it->second != CUPTI_SUCCESS) return it->second;
  fake->enabled.push_back(kind);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Disable(CUpti_ActivityKind kind) {
  std::erase(fake->enabled, kind);
  return CUPTI_SUCCESS;
}
// Like CUPTI holding several buffers at once: every pending buffer is
// requested first, then each one obtained is completed.
CUptiResult CUPTIAPI FakeCupti::FlushAll(uint32_t flag) {
  base::MutexLock lock(&fake->mu_);
  if (flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ++fake->forced_flushes;
  std::vector<B> pending;
  pending.swap(fake->pending);
  std::vector<std::pair<uint8_t*, size_t>> obtained;
  obtained.swap(fake->completions_due_);
  for (const B& records : pending) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    fake->requested(&buffer, &size, &max_records);
    if (buffer == nullptr || size < records.size()) {
      fake->dropped_ += records.Records().size();
      obtained.emplace_back(nullptr, 0);
      continue;
    }
    obtained.emplace_back(buffer, records.CopyTo(buffer, size));
  }
  if (flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
    std::vector<Held> held;
    held.swap(fake->held_);
    for (const Held& h : held) {
      obtained.emplace_back(h.buffer, h.records.CopyTo(h.buffer, h.records.size()));
    }
  }
  for (auto [buffer, valid] : obtained) {
    if (buffer != nullptr) fake->completed(nullptr, 0, buffer, 0, valid);
  }
  return CUPTI_SUCCESS;
}
void FakeCupti::Hold(const B& records) {
  base::MutexLock lock(&mu_);
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  requested(&buffer, &size, &max_records);
  ASSERT_NE(buffer, nullptr);
  held_.push_back(Held{buffer, records});
}
void FakeCupti::FinishHeld(const B& finished) {
  base::MutexLock lock(&mu_);
  ASSERT_FALSE(held_.empty());
  uint8_t* buffer = held_.front().buffer;
  held_.erase(held_.begin());
  const size_t valid = finished.CopyTo(buffer, finished.size());
  completions_due_.emplace_back(buffer, valid);
}
CUptiResult CUPTIAPI FakeCupti::Dropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = fake->dropped_;
  fake->dropped_ = 0;  // CUPTI counts since the last call
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Push(CUpti_ExternalCorrelationKind, uint64_t id) {
  ++fake->pushes;
  fake->last_pushed = id;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::Pop(CUpti_ExternalCorrelationKind, uint64_t* id) {
  ++fake->pops;
  *id = 0;
  return CUPTI_SUCCESS;
}
int64_t FakeCupti::Now() { return fake->now_.fetch_add(2) + 2; }  // each reading 2 ns later
CUptiResult CUPTIAPI FakeCupti::Timestamp(uint64_t* t) {
  // Read between two Now calls: the agent's clock + 1, plus the lead.
  *t = static_cast<uint64_t>(fake->now_.load() + 1) + kCuptiAhead;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FakeCupti::CallbackName(CUpti_CallbackDomain, uint32_t cbid,
                                             const char** name) {
  *name = cbid == 211 ? "cudaLaunchKernel_v7000" : "cudaGetDevice_v3020";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI FakeCupti::SwitchCall(CUpti_CallbackId cbid, uint8_t enable) {
  fake->kinds_enabled_at_switch.push_back(fake->enabled.size());
  if (!enable) fake->switched_off.push_back(cbid);
  return CUPTI_SUCCESS;
}

CuptiApi FakeCupti::Api() const {
  CuptiApi api;
  if (single_call_switches) {
    api.activity_enable_runtime_api = &SwitchCall;
    api.activity_enable_driver_api = &SwitchCall;
  }
  api.get_version = &GetVersion;
  api.get_result_string = &ResultString;
  api.subscribe = &Subscribe;
  api.unsubscribe = &Unsubscribe;
  api.activity_register_callbacks = &Register;
  api.activity_enable = &Enable;
  api.activity_disable = &Disable;
  api.activity_flush_all = &FlushAll;
  api.activity_get_next_record = &SyntheticActivityBuffer::NextRecord;
  api.activity_get_num_dropped_records = &Dropped;
  api.activity_push_external_correlation_id = &Push;
  api.activity_pop_external_correlation_id = &Pop;
  api.get_timestamp = &Timestamp;
  api.get_callback_name = &CallbackName;
  return api;
}

}  // namespace trainscope::agent
