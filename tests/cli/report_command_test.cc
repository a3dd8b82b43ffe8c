// `trainscope report` on a real GPU trace imported from
// ../shared/data/kineto-gpu/: the page states the device time per rank and
// the top kernels (the views are left out: no viewer is given).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trace_import_test_base.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ReportCommandTest : public TraceImportTestBase {
 protected:
  ReportCommandTest() : TraceImportTestBase("trainscope-report-cli") {}

  std::string Report(const std::string& job) {
    EXPECT_EQ(Run({"report", job, "--data-dir", data_dir().string(), "--out",
                   (dir_ / "report").string(), "--viewer", (dir_ / "no-viewer").string()}),
              0)
        << err_.str();
    std::ifstream file(dir_ / "report" / "index.html");
    std::stringstream html;
    html << file.rdbuf();
    return html.str();
  }
};

TEST_F(ReportCommandTest, AGpuJobsReportStatesDeviceTimeAndTopKernels) {
  ASSERT_EQ(Import("nccl", {GpuTrace("nccl_parser_config__nccl_data.json.gz")}), 0) << err_.str();
  const std::string html = Report("nccl");
  EXPECT_THAT(html, HasSubstr("<h2>Device time</h2>"));
  EXPECT_THAT(html, HasSubstr("<th>GPU busy ms</th>"));
  EXPECT_THAT(html, HasSubstr("<h2>Top kernels</h2>"));
  // The step is CPU-bound: the GPU is busy for a fraction of it (38.5 ms of
  // ~222 ms); the row of rank 0 says so.
  const size_t row = html.find("<tr><td>0</td>", html.find("<h2>Device time</h2>"));
  ASSERT_NE(row, std::string::npos) << html;
  const std::string cells = html.substr(row, html.find("</tr>", row) - row);
  int complete_steps = 0;
  double step_ms = 0, busy_ms = 0, percent = 0;
  ASSERT_EQ(std::sscanf(cells.c_str(), "<tr><td>0</td><td>%d</td><td>%lf</td><td>%lf</td><td>%lf",
                        &complete_steps, &step_ms, &busy_ms, &percent),
            4)
      << cells;
  EXPECT_GE(complete_steps, 2);
  EXPECT_GT(step_ms, 150);
  EXPECT_GT(busy_ms, 20);
  EXPECT_LT(busy_ms, 60);
  EXPECT_LT(percent, 40);
  // NCCL kernels are listed as NCCL, not compute.
  const size_t nccl = html.find("ncclKernel_AllReduce", html.find("<h2>Top kernels</h2>"));
  ASSERT_NE(nccl, std::string::npos);
  EXPECT_THAT(html.substr(nccl, html.find("</tr>", nccl) - nccl), HasSubstr("<td>NCCL</td>"));
}

TEST_F(ReportCommandTest, ACpuOnlyJobHasNoDeviceTimeSection) {
  // A host-only profile: three ProfilerStep ranges of CPU operators.
  std::filesystem::create_directories(dir_);
  std::ofstream trace(dir_ / "cpu.json");
  trace << R"({"traceEvents":[)";
  for (int step = 1; step <= 3; ++step) {
    const int t = step * 10000;
    trace << (step > 1 ? "," : "") << R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)"
          << step << R"(","pid":1,"tid":1,"ts":)" << t << R"(,"dur":9000},)"
          << R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":)" << t + 100
          << R"(,"dur":5000})";
  }
  trace << "]}";
  trace.close();
  ASSERT_EQ(Import("cpu", {dir_ / "cpu.json"}), 0) << err_.str();
  const std::string html = Report("cpu");
  EXPECT_THAT(html, HasSubstr("<h2>Ranks</h2>"));
  EXPECT_THAT(html, Not(HasSubstr("<h2>Device time</h2>")));
  EXPECT_THAT(html, Not(HasSubstr("<h2>Top kernels</h2>")));
}

}  // namespace
}  // namespace trainscope::cli
