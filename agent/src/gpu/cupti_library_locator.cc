#include "gpu/cupti_library_locator.h"

#include <link.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trainscope::agent {

namespace {

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int CollectLoaded(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
    static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
  }
  return 0;
}

}  // namespace

CuptiLibraryLocator::Inputs CuptiLibraryLocator::FromProcess(const std::string& explicit_path,
                                                             int major) {
  Inputs inputs;
  inputs.major = major;
  inputs.explicit_path = explicit_path;
  if (inputs.explicit_path.empty()) {
    if (const char* env = std::getenv(kEnvironmentVariable)) inputs.explicit_path = env;
  }
  for (const char* name : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* env = std::getenv(name);
    if (env != nullptr && *env != '\0') {
      inputs.cuda_home = env;
      break;
    }
  }
  dl_iterate_phdr(&CollectLoaded, &inputs.loaded_libraries);
  return inputs;
}

std::vector<CuptiLibraryLocator::Candidate> CuptiLibraryLocator::Candidates(const Inputs& in) {
  const std::string soname = absl::StrCat("libcupti.so.", in.major);
  std::vector<Candidate> out;
  absl::flat_hash_set<std::string> seen;
  const auto add = [&](std::string path, std::string why) {
    // Lexically normal, so "torch/lib/../../nvidia" and its duplicates collapse.
    if (absl::StrContains(path, "/")) path = std::filesystem::path(path).lexically_normal();
    if (seen.insert(path).second) out.push_back({std::move(path), std::move(why)});
  };

  if (!in.explicit_path.empty()) {
    if (IsDirectory(in.explicit_path)) {
      add(absl::StrCat(in.explicit_path, "/", soname), "explicit folder");
    } else {
      add(in.explicit_path, "explicit");
    }
    return out;
  }
  for (const std::string& lib : in.loaded_libraries) {
    if (absl::StartsWith(Basename(lib), "libcupti.so")) add(lib, "already loaded");
  }
  for (const std::string& lib : in.loaded_libraries) {
    const std::string base = Basename(lib);
    const bool cudart = absl::StartsWith(base, "libcudart.so");
    const bool torch = absl::StartsWith(base, "libtorch_cuda.so");
    if (!cudart && !torch) continue;
    const std::string dir = Dirname(lib);
    const std::string why = absl::StrCat("beside ", lib);
    if (cudart) {
      add(absl::StrCat(dir, "/", soname), why);                          // nvidia/cu13/lib
      add(absl::StrCat(dir, "/../../cuda_cupti/lib/", soname), why);     // nvidia/cuda_runtime/lib
      add(absl::StrCat(dir, "/../extras/CUPTI/lib64/", soname), why);    // <cuda>/lib64
    } else {
      add(absl::StrCat(dir, "/", soname), why);  // a bundled CUPTI in torch/lib
      const std::string site = absl::StrCat(dir, "/../..");  // torch/lib -> site-packages
      add(absl::StrCat(site, "/nvidia/cu", in.major, "/lib/", soname), why);
      add(absl::StrCat(site, "/nvidia/cuda_cupti/lib/", soname), why);
    }
  }
  if (!in.cuda_home.empty()) {
    add(absl::StrCat(in.cuda_home, "/extras/CUPTI/lib64/", soname), "CUDA_HOME");
    add(absl::StrCat(in.cuda_home, "/lib64/", soname), "CUDA_HOME");
  }
  add(absl::StrCat("/usr/local/cuda/extras/CUPTI/lib64/", soname), "system CUDA");
  add(absl::StrCat("/usr/local/cuda/lib64/", soname), "system CUDA");
  add(soname, "the dynamic loader's search path");
  return out;
}

}  // namespace trainscope::agent
