#include "gpu/traced_api_calls.h"

#include "gpu/activity_record_converter.h"

namespace trainscope::agent {

size_t TracedApiCalls::DropOthers(const CuptiApi& api) {
  if (api.activity_enable_runtime_api == nullptr || api.activity_enable_driver_api == nullptr ||
      api.get_callback_name == nullptr) {
    return 0;
  }
  struct Domain {
    CUpti_CallbackDomain domain;
    uint32_t size;  // callback ids of this build's CUPTI headers
    CUptiResult (*enable)(CUpti_CallbackId, uint8_t);
  };
  const Domain domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, api.activity_enable_runtime_api},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, api.activity_enable_driver_api},
  };
  size_t dropped = 0;
  for (const Domain& d : domains) {
    for (uint32_t cbid = 1; cbid < d.size; ++cbid) {
      const char* name = nullptr;
      if (api.get_callback_name(d.domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr ||
          ActivityRecordConverter::CallKindOfName(name) != RuntimeCall::kOther) {
        continue;
      }
      if (d.enable(cbid, 0) == CUPTI_SUCCESS) ++dropped;
    }
  }
  return dropped;
}

}  // namespace trainscope::agent
