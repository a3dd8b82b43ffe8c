#include "gpu/traced_api_calls.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::agent {
namespace {

// A fake CUPTI's callback names and what was switched, per domain.
struct Calls {
  std::map<std::pair<CUpti_CallbackDomain, uint32_t>, std::string> names;
  std::vector<std::pair<CUpti_CallbackDomain, uint32_t>> switched_off;
  std::vector<std::pair<CUpti_CallbackDomain, uint32_t>> switched_on;
};
Calls* calls = nullptr;

CUptiResult CUPTIAPI Name(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  auto it = calls->names.find({domain, cbid});
  if (it == calls->names.end()) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = it->second.c_str();
  return CUPTI_SUCCESS;
}
CUptiResult Switch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, uint8_t enable) {
  (enable ? calls->switched_on : calls->switched_off).emplace_back(domain, cbid);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Runtime(CUpti_CallbackId cbid, uint8_t enable) {
  return Switch(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, enable);
}
CUptiResult CUPTIAPI Driver(CUpti_CallbackId cbid, uint8_t enable) {
  return Switch(CUPTI_CB_DOMAIN_DRIVER_API, cbid, enable);
}

class TracedApiCallsTest : public ::testing::Test {
 protected:
  TracedApiCallsTest() {
    calls = &calls_;
    api_.get_callback_name = &Name;
    api_.activity_enable_runtime_api = &Runtime;
    api_.activity_enable_driver_api = &Driver;
    // Launches, copies, memsets, graph launches and synchronisation are kept
    // (the converter's calls), whatever their version suffix.
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel_v7000");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 212, "cudaLaunchKernel_ptsz_v7000");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 31, "cudaMemcpyAsync_v3020");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 51, "cudaMemsetAsync_v3020");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 311, "cudaGraphLaunch_v10000");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 131, "cudaStreamSynchronize_v3020");
    Add(CUPTI_CB_DOMAIN_DRIVER_API, 307, "cuLaunchKernel");
    Add(CUPTI_CB_DOMAIN_DRIVER_API, 652, "cuLaunchKernelEx");
    // What torch calls around every operator: dropped.
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 17, "cudaGetDevice_v3020");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 317, "cudaStreamIsCapturing_v10000");
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, 3, "cudaGetLastError_v3020");
    Add(CUPTI_CB_DOMAIN_DRIVER_API, 17, "cuCtxGetCurrent");
  }
  ~TracedApiCallsTest() override { calls = nullptr; }

  void Add(CUpti_CallbackDomain domain, uint32_t cbid, std::string name) {
    calls_.names[{domain, cbid}] = std::move(name);
  }

  Calls calls_;
  CuptiApi api_;
};

TEST_F(TracedApiCallsTest, SwitchesOffEveryCallTheConverterDropsAndNothingItKeeps) {
  EXPECT_EQ(TracedApiCalls::DropOthers(api_), 4u);
  using P = std::pair<CUpti_CallbackDomain, uint32_t>;
  EXPECT_EQ(calls_.switched_off, (std::vector<P>{{CUPTI_CB_DOMAIN_RUNTIME_API, 3},
                                                 {CUPTI_CB_DOMAIN_RUNTIME_API, 17},
                                                 {CUPTI_CB_DOMAIN_RUNTIME_API, 317},
                                                 {CUPTI_CB_DOMAIN_DRIVER_API, 17}}));
  // Only switched off: enabling single calls without the kinds records
  // nothing with CUPTI 13.0.
  EXPECT_TRUE(calls_.switched_on.empty());
}

TEST_F(TracedApiCallsTest, AnOlderCuptiWithoutSingleCallSwitchesIsLeftAlone) {
  api_.activity_enable_driver_api = nullptr;
  EXPECT_EQ(TracedApiCalls::DropOthers(api_), 0u);
  EXPECT_TRUE(calls_.switched_off.empty());
}

TEST_F(TracedApiCallsTest, ARefusedSwitchIsNotCounted) {
  api_.activity_enable_runtime_api = [](CUpti_CallbackId, uint8_t) -> CUptiResult {
    return CUPTI_ERROR_NOT_INITIALIZED;
  };
  EXPECT_EQ(TracedApiCalls::DropOthers(api_), 1u);  // the driver's cuCtxGetCurrent
}

}  // namespace
}  // namespace trainscope::agent
