// Where to look for libcupti: the CUPTI of the CUDA the user's PyTorch uses,
// so that the agent and torch (Kineto) share one CUPTI and a CPU-only machine
// never needs one.
//
// Usage:
//   CuptiLibraryLocator::Inputs in = CuptiLibraryLocator::FromProcess(options.cupti_library, 13);
//   for (const auto& c : CuptiLibraryLocator::Candidates(in)) try dlopen(c.path) ...
//
// Order (first that loads wins):
//   1. an explicit path (AgentOptions::cupti_library, else $TRAINSCOPE_CUPTI_LIBRARY):
//      a file, or a folder holding libcupti.so.<major>; nothing else is tried;
//   2. a libcupti already loaded in the process (torch's Kineto links it);
//   3. next to the CUDA libraries already loaded (libcudart, libtorch_cuda):
//      the same folder (pip's nvidia/cu13/lib), pip's nvidia/cuda_cupti/lib
//      beside nvidia/cuda_runtime/lib, and site-packages/nvidia/{cu<major>,
//      cuda_cupti}/lib seen from torch/lib;
//   4. $CUDA_HOME (then $CUDA_PATH): extras/CUPTI/lib64, lib64;
//   5. /usr/local/cuda/extras/CUPTI/lib64, /usr/local/cuda/lib64;
//   6. the bare soname, for the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig).
// Duplicates are removed; a path is listed whether or not it exists (the
// loader says which it tried).
//
// Threading: pure functions, except FromProcess, which reads the environment
// and the list of loaded objects (thread-safe).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_CUPTI_LIBRARY_LOCATOR_H_
#define TRAINSCOPE_AGENT_SRC_GPU_CUPTI_LIBRARY_LOCATOR_H_

#include <string>
#include <vector>

namespace trainscope::agent {

class CuptiLibraryLocator {
 public:
  struct Inputs {
    std::string explicit_path;                  // options, else the environment variable
    std::vector<std::string> loaded_libraries;  // absolute paths of the loaded objects
    std::string cuda_home;                      // $CUDA_HOME or $CUDA_PATH
    int major = 13;                             // libcupti.so.<major>
  };
  struct Candidate {
    std::string path;
    std::string why;  // "explicit", "already loaded", "beside /x/libcudart.so.13", ...
  };

  static constexpr const char* kEnvironmentVariable = "TRAINSCOPE_CUPTI_LIBRARY";

  static Inputs FromProcess(const std::string& explicit_path, int major);
  static std::vector<Candidate> Candidates(const Inputs& inputs);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_CUPTI_LIBRARY_LOCATOR_H_
