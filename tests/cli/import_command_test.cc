// `trainscope import` on the real GPU traces of ../shared/data/kineto-gpu/:
// what it prints about ranks, GPU work, launches and steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "trace_import_test_base.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ImportCommandTest : public TraceImportTestBase {
 protected:
  ImportCommandTest() : TraceImportTestBase("trainscope-import-cli") {}

  int Import(const std::string& job, const std::vector<std::string>& files) {
    std::vector<std::filesystem::path> traces;
    for (const std::string& file : files) traces.push_back(GpuTrace(file));
    return TraceImportTestBase::Import(job, traces);
  }
};

TEST_F(ImportCommandTest, SaysWhatGpuWorkWasLinkedAndWhereStepsCameFrom) {
  ASSERT_EQ(Import("diff", {"trace_diff__control__control.json.gz"}), 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("GPU: 8508 kernels, 60 NCCL kernels (60 joined"));
  EXPECT_THAT(out, HasSubstr("launches linked for 9450 of 9450 device events"));
  EXPECT_THAT(out, HasSubstr("rank 3 (distributedInfo, of 8)"));
  EXPECT_THAT(out, HasSubstr("steps from ProfilerStep# marks"));
}

TEST_F(ImportCommandTest, TheAmdTraceIsRankZeroNotTheDigitInItsName) {
  ASSERT_EQ(Import("amd", {"amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"}), 0)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("rank 0 (only file)"));
  EXPECT_THAT(out_.str(), HasSubstr("2 gpu_user_annotation ranges"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("rank 2")));
}

TEST_F(ImportCommandTest, AlexNetSaysWhyItHasNoSteps) {
  ASSERT_EQ(Import("alexnet",
                   {"critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"}),
            0)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("no steps: the trace has no ProfilerStep# marks"));
}

}  // namespace
}  // namespace trainscope::cli
