#include "gpu/cupti_library_locator.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

std::vector<std::string> Paths(const CuptiLibraryLocator::Inputs& inputs) {
  std::vector<std::string> paths;
  for (const auto& c : CuptiLibraryLocator::Candidates(inputs)) paths.push_back(c.path);
  return paths;
}

size_t IndexOf(const std::vector<std::string>& paths, const std::string& path) {
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i] == path) return i;
  }
  return paths.size();
}

TEST(CuptiLibraryLocatorTest, PipCuda13LayoutBesideTorch) {
  // torch 2.11+cu130: torch/lib/libtorch_cuda.so and nvidia/cu13/lib/libcudart.so.13.
  CuptiLibraryLocator::Inputs in;
  const std::string site = "/venv/lib/python3.12/site-packages";
  in.loaded_libraries = {site + "/torch/lib/libtorch_cuda.so",
                         site + "/nvidia/cu13/lib/libcudart.so.13"};
  const std::vector<std::string> paths = Paths(in);
  const size_t pip = IndexOf(paths, site + "/nvidia/cu13/lib/libcupti.so.13");
  ASSERT_LT(pip, paths.size());
  EXPECT_LT(pip, IndexOf(paths, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"));
  EXPECT_EQ(paths.back(), "libcupti.so.13");  // the loader's own search comes last
}

TEST(CuptiLibraryLocatorTest, PipCudaCuptiPackageLayout) {
  // nvidia-cuda-runtime / nvidia-cuda-cupti as separate packages (cu12 style).
  CuptiLibraryLocator::Inputs in;
  const std::string site = "/venv/lib/python3.12/site-packages";
  in.loaded_libraries = {site + "/nvidia/cuda_runtime/lib/libcudart.so.13"};
  EXPECT_LT(IndexOf(Paths(in), site + "/nvidia/cuda_cupti/lib/libcupti.so.13"), Paths(in).size());
  // And seen from torch/lib alone.
  in.loaded_libraries = {site + "/torch/lib/libtorch_cuda.so"};
  EXPECT_LT(IndexOf(Paths(in), site + "/nvidia/cuda_cupti/lib/libcupti.so.13"), Paths(in).size());
}

TEST(CuptiLibraryLocatorTest, AnAlreadyLoadedCuptiComesFirst) {
  CuptiLibraryLocator::Inputs in;
  in.loaded_libraries = {"/x/nvidia/cu13/lib/libcudart.so.13", "/y/libcupti.so.13"};
  EXPECT_EQ(Paths(in).front(), "/y/libcupti.so.13");
}

TEST(CuptiLibraryLocatorTest, AnExplicitPathIsTheOnlyCandidate) {
  CuptiLibraryLocator::Inputs in;
  in.explicit_path = "/opt/cupti/libcupti.so.13.0.1";
  in.loaded_libraries = {"/y/libcupti.so.13"};
  EXPECT_EQ(Paths(in), (std::vector<std::string>{"/opt/cupti/libcupti.so.13.0.1"}));
  in.explicit_path = "/tmp";  // a folder: the soname in it
  EXPECT_EQ(Paths(in), (std::vector<std::string>{"/tmp/libcupti.so.13"}));
}

TEST(CuptiLibraryLocatorTest, CudaHomeAndTheSystemAndNoDuplicates) {
  CuptiLibraryLocator::Inputs in;
  in.cuda_home = "/usr/local/cuda";
  in.loaded_libraries = {"/usr/local/cuda/lib64/libcudart.so.13"};
  const std::vector<std::string> paths = Paths(in);
  EXPECT_EQ(IndexOf(paths, "/usr/local/cuda/lib64/libcupti.so.13"), 0u);
  EXPECT_LT(IndexOf(paths, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"), paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(IndexOf(paths, paths[i]), i) << "duplicate " << paths[i];
  }
}

TEST(CuptiLibraryLocatorTest, FromProcessReadsTheEnvironment) {
  ::setenv(CuptiLibraryLocator::kEnvironmentVariable, "/env/libcupti.so.13", 1);
  CuptiLibraryLocator::Inputs in = CuptiLibraryLocator::FromProcess("", 13);
  EXPECT_EQ(in.explicit_path, "/env/libcupti.so.13");
  in = CuptiLibraryLocator::FromProcess("/option/libcupti.so.13", 13);
  EXPECT_EQ(in.explicit_path, "/option/libcupti.so.13");  // the option wins
  ::unsetenv(CuptiLibraryLocator::kEnvironmentVariable);
  in = CuptiLibraryLocator::FromProcess("", 13);
  EXPECT_TRUE(in.explicit_path.empty());
  EXPECT_FALSE(in.loaded_libraries.empty());  // this test binary's own libraries
}

}  // namespace
}  // namespace trainscope::agent
