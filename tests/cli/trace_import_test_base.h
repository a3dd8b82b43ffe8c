// The set-up of the CLI tests that import a trace first (import_command_test,
// report_command_test): a private directory per test, the real GPU traces of
// ../shared/data/kineto-gpu/, and `trainscope` run in-process with its output
// captured.
//
// Usage:
//   class ReportCommandTest : public TraceImportTestBase {
//    protected:
//     ReportCommandTest() : TraceImportTestBase("trainscope-report-cli") {}
//   };
//   TEST_F(ReportCommandTest, X) {
//     ASSERT_EQ(Import("nccl", {GpuTrace("nccl_parser_config__nccl_data.json.gz")}), 0) <<
//     err_.str(); ASSERT_EQ(Run({"report", "nccl", "--data-dir", data_dir().string()}), 0);
//   }
//
// Threading: a GoogleTest fixture (one test's thread).
#ifndef TRAINSCOPE_TESTS_CLI_TRACE_IMPORT_TEST_BASE_H_
#define TRAINSCOPE_TESTS_CLI_TRACE_IMPORT_TEST_BASE_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::cli {

class TraceImportTestBase : public ::testing::Test {
 protected:
  // `prefix` names the test's directory under the system temp directory.
  explicit TraceImportTestBase(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override;
  void TearDown() override;

  // A trace of ../shared/data/kineto-gpu/ by file name.
  static std::filesystem::path GpuTrace(const std::string& name);
  // The --data-dir the imports write (inside dir_).
  std::filesystem::path data_dir() const { return dir_ / "data"; }

  // Runs `trainscope ARGS...` in-process; out_ and err_ hold what it printed.
  int Run(const std::vector<std::string>& args);
  // `trainscope import --job JOB --data-dir data_dir() TRACES...`.
  int Import(const std::string& job, const std::vector<std::filesystem::path>& traces);

  std::filesystem::path dir_;
  std::ostringstream out_;
  std::ostringstream err_;

 private:
  std::string prefix_;
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_TESTS_CLI_TRACE_IMPORT_TEST_BASE_H_
