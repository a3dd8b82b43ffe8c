// The CUPTI functions the GPU activity tracer calls, as a table of function
// pointers: filled by CuptiLoader from the libcupti it dlopen'ed, or by a unit
// test with fakes (the tracer never calls CUPTI any other way, so tests can
// drive every path, "another client holds CUPTI" included, without a GPU).
//
// Usage:
//   absl::StatusOr<CuptiLoader::Loaded> loaded = CuptiLoader::Load(candidates);
//   const CuptiApi& api = loaded->api;
//   api.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
//
// Threading: a plain struct, immutable once filled; CUPTI's own functions are
// thread-safe.
#ifndef TRAINSCOPE_AGENT_SRC_GPU_CUPTI_API_H_
#define TRAINSCOPE_AGENT_SRC_GPU_CUPTI_API_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainscope::agent {

struct CuptiApi {
  CUptiResult (*get_version)(uint32_t* version) = nullptr;
  CUptiResult (*get_result_string)(CUptiResult result, const char** text) = nullptr;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* user_data) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle subscriber) = nullptr;
  CUptiResult (*activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                             CUpti_BuffersCallbackCompleteFunc completed) = nullptr;
  CUptiResult (*activity_enable)(CUpti_ActivityKind kind) = nullptr;
  CUptiResult (*activity_disable)(CUpti_ActivityKind kind) = nullptr;
  CUptiResult (*activity_flush_all)(uint32_t flag) = nullptr;
  CUptiResult (*activity_get_next_record)(uint8_t* buffer, size_t valid_bytes,
                                          CUpti_Activity** record) = nullptr;
  CUptiResult (*activity_get_num_dropped_records)(CUcontext context, uint32_t stream_id,
                                                  size_t* dropped) = nullptr;
  CUptiResult (*activity_push_external_correlation_id)(CUpti_ExternalCorrelationKind kind,
                                                       uint64_t id) = nullptr;
  CUptiResult (*activity_pop_external_correlation_id)(CUpti_ExternalCorrelationKind kind,
                                                      uint64_t* last_id) = nullptr;
  CUptiResult (*get_timestamp)(uint64_t* timestamp) = nullptr;
  CUptiResult (*get_callback_name)(CUpti_CallbackDomain domain, uint32_t cbid,
                                   const char** name) = nullptr;
  // Optional (CUPTI 12.4+; null before): records of single calls.
  CUptiResult (*activity_enable_runtime_api)(CUpti_CallbackId cbid, uint8_t enable) = nullptr;
  CUptiResult (*activity_enable_driver_api)(CUpti_CallbackId cbid, uint8_t enable) = nullptr;

  // "CUPTI_ERROR_NOT_INITIALIZED (15)": the library's name for `result` when
  // it can say, else the number.
  std::string ResultName(CUptiResult result) const {
    const char* text = nullptr;
    if (get_result_string != nullptr && get_result_string(result, &text) == CUPTI_SUCCESS &&
        text != nullptr) {
      return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
    }
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_CUPTI_API_H_
