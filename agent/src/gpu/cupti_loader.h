// Loads libcupti at run time (dlopen) and fills a CuptiApi from it, so the
// agent links no CUDA library and a machine without one is unaffected.
//
// Usage:
//   absl::StatusOr<CuptiLoader::Loaded> cupti = CuptiLoader::Load(
//       CuptiLibraryLocator::Candidates(CuptiLibraryLocator::FromProcess("", 13)));
//   if (!cupti.ok()) { say cupti.status() once; carry on without GPU activity; }
//   cupti->api.activity_enable(...);   // cupti->path: what was loaded
//
// The first candidate that dlopens, has every symbol and is CUPTI of the
// major version this agent was compiled against (CUPTI_API_VERSION's) wins;
// the error lists every candidate tried and why it was refused. A library of
// another major version is refused with a message naming both versions: its
// activity records have other layouts. The library is never unloaded (CUPTI
// keeps threads and callbacks into the process).
//
// Threading: Load is thread-safe (dlopen is).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_CUPTI_LOADER_H_
#define TRAINSCOPE_AGENT_SRC_GPU_CUPTI_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/cupti_api.h"
#include "gpu/cupti_library_locator.h"

namespace trainscope::agent {

class CuptiLoader {
 public:
  struct Loaded {
    CuptiApi api;
    std::string path;     // as dlopen'ed
    std::string why;      // how it was found (CuptiLibraryLocator::Candidate::why)
    uint32_t version = 0;  // cuptiGetVersion; 0 when it cannot tell (no driver)
  };

  // The major version of the headers compiled in (13 for CUPTI_API_VERSION 130001).
  static int CompiledMajor();
  // CUDA major version of a cuptiGetVersion value: 130001 -> 13; before
  // CUDA 13 the API version was a small number (v19..v28: CUDA 12).
  static int MajorOf(uint32_t version);

  static absl::StatusOr<Loaded> Load(const std::vector<CuptiLibraryLocator::Candidate>& candidates);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_CUPTI_LOADER_H_
