#include "gpu/cupti_loader.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainscope::agent {

namespace {

// Fills `*slot` from `handle`; false (and `*missing` set) when absent.
template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* slot, std::string* missing) {
  void* address = ::dlsym(handle, symbol);
  if (address == nullptr) {
    *missing = symbol;
    return false;
  }
  *slot = reinterpret_cast<Fn>(address);
  return true;
}

// Optional symbols stay null when absent (an older CUPTI); always true.
template <typename Fn>
bool ResolveOptional(void* handle, const char* symbol, Fn* slot) {
  *slot = reinterpret_cast<Fn>(::dlsym(handle, symbol));
  return true;
}

bool ResolveAll(void* handle, CuptiApi* api, std::string* missing) {
  return Resolve(handle, "cuptiGetVersion", &api->get_version, missing) &&
         Resolve(handle, "cuptiGetResultString", &api->get_result_string, missing) &&
         Resolve(handle, "cuptiSubscribe", &api->subscribe, missing) &&
         Resolve(handle, "cuptiUnsubscribe", &api->unsubscribe, missing) &&
         Resolve(handle, "cuptiActivityRegisterCallbacks", &api->activity_register_callbacks,
                 missing) &&
         Resolve(handle, "cuptiActivityEnable", &api->activity_enable, missing) &&
         Resolve(handle, "cuptiActivityDisable", &api->activity_disable, missing) &&
         Resolve(handle, "cuptiActivityFlushAll", &api->activity_flush_all, missing) &&
         Resolve(handle, "cuptiActivityGetNextRecord", &api->activity_get_next_record, missing) &&
         Resolve(handle, "cuptiActivityGetNumDroppedRecords",
                 &api->activity_get_num_dropped_records, missing) &&
         Resolve(handle, "cuptiActivityPushExternalCorrelationId",
                 &api->activity_push_external_correlation_id, missing) &&
         Resolve(handle, "cuptiActivityPopExternalCorrelationId",
                 &api->activity_pop_external_correlation_id, missing) &&
         Resolve(handle, "cuptiGetTimestamp", &api->get_timestamp, missing) &&
         Resolve(handle, "cuptiGetCallbackName", &api->get_callback_name, missing) &&
         ResolveOptional(handle, "cuptiActivityEnableRuntimeApi",
                         &api->activity_enable_runtime_api) &&
         ResolveOptional(handle, "cuptiActivityEnableDriverApi", &api->activity_enable_driver_api);
}

}  // namespace

int CuptiLoader::CompiledMajor() { return MajorOf(CUPTI_API_VERSION); }

int CuptiLoader::MajorOf(uint32_t version) {
  if (version >= 10000) return static_cast<int>(version / 10000);
  return version >= 19 ? 12 : 11;  // v19..v28: CUDA 12.x; v13..v18: CUDA 11.x
}

absl::StatusOr<CuptiLoader::Loaded> CuptiLoader::Load(
    const std::vector<CuptiLibraryLocator::Candidate>& candidates) {
  std::vector<std::string> refused;
  for (const CuptiLibraryLocator::Candidate& candidate : candidates) {
    void* handle = ::dlopen(candidate.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = ::dlerror();
      refused.push_back(absl::StrCat(candidate.path, " (", candidate.why, "): ",
                                     error != nullptr ? error : "dlopen failed"));
      continue;
    }
    Loaded loaded;
    std::string missing;
    if (!ResolveAll(handle, &loaded.api, &missing)) {
      refused.push_back(absl::StrCat(candidate.path, ": no symbol ", missing));
      continue;  // not unloaded: harmless, and it may be shared with torch
    }
    if (loaded.api.get_version(&loaded.version) != CUPTI_SUCCESS) {
      refused.push_back(absl::StrCat(candidate.path, ": cuptiGetVersion failed"));
      continue;
    }
    // Without a driver cuptiGetVersion says 0: nothing to compare, and the
    // tracer's first call will say why CUPTI cannot run.
    if (loaded.version != 0 && MajorOf(loaded.version) != CompiledMajor()) {
      refused.push_back(absl::StrCat(
          candidate.path, ": CUPTI API version ", loaded.version, " is CUDA ",
          MajorOf(loaded.version), "; this agent was built with CUPTI ", CUPTI_API_VERSION,
          " headers (CUDA ", CompiledMajor(), ") and reads only that layout of activity records: "
          "rebuild the agent with the CUPTI headers of CUDA ", MajorOf(loaded.version)));
      continue;
    }
    loaded.path = candidate.path;
    loaded.why = candidate.why;
    return loaded;
  }
  return absl::NotFoundError(absl::StrCat(
      "no usable libcupti.so.", CompiledMajor(),
      " (set TRAINSCOPE_CUPTI_LIBRARY to the file or its folder); tried: ",
      refused.empty() ? std::string("nothing") : absl::StrJoin(refused, "; ")));
}

}  // namespace trainscope::agent
