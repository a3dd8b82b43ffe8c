#include "trace_import_test_base.h"

#include <unistd.h>

#include <optional>
#include <string_view>

#include "trainscope/cli/cli.h"

namespace trainscope::cli {

namespace {
const std::filesystem::path kData = KINETO_GPU_DATA;
}  // namespace

void TraceImportTestBase::SetUp() {
  ASSERT_TRUE(std::filesystem::is_directory(kData)) << kData << " is missing";
  dir_ = std::filesystem::temp_directory_path() /
         (prefix_ + "-" + std::to_string(::getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir_);
}

void TraceImportTestBase::TearDown() { std::filesystem::remove_all(dir_); }

std::filesystem::path TraceImportTestBase::GpuTrace(const std::string& name) {
  return kData / name;
}

int TraceImportTestBase::Run(const std::vector<std::string>& args) {
  out_.str("");
  err_.str("");
  CommandContext ctx;
  ctx.out = &out_;
  ctx.err = &err_;
  ctx.env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  ctx.requested_by = "tester@box";
  return RunCli(args, ctx);
}

int TraceImportTestBase::Import(const std::string& job,
                                const std::vector<std::filesystem::path>& traces) {
  std::vector<std::string> args = {"import", "--job", job, "--data-dir", data_dir().string()};
  for (const std::filesystem::path& trace : traces) args.push_back(trace.string());
  return Run(args);
}

}  // namespace trainscope::cli
