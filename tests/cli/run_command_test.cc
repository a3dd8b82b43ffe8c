// `trainscope run` in-process: the exec is recorded instead of replacing the
// test, so the environment the program would get can be checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "trainscope/cli/cli.h"
#include "trainscope/cli/plugin_locator.h"

namespace trainscope::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A fake plugin layout: DIR/trainscope/__init__.py and DIR/sitecustomize/sitecustomize.py.
class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/trainscope-run-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::filesystem::create_directories(dir_ / "trainscope");
    std::filesystem::create_directories(dir_ / "sitecustomize");
    std::ofstream(dir_ / "trainscope" / "__init__.py") << "\n";
    std::ofstream(dir_ / "sitecustomize" / "sitecustomize.py") << "\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int Run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    out_.str("");
    err_.str("");
    CommandContext ctx;
    ctx.out = &out_;
    ctx.err = &err_;
    ctx.env = [env](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    ctx.exec = [this](const std::vector<std::string>& argv,
                      const std::vector<std::pair<std::string, std::string>>& set_env) {
      exec_argv_ = argv;
      exec_env_.clear();
      for (const auto& [k, v] : set_env) exec_env_[k] = v;
      ++exec_calls_;
      return exec_error_;
    };
    return RunCli(args, ctx);
  }

  std::filesystem::path dir_;
  std::ostringstream out_;
  std::ostringstream err_;
  std::vector<std::string> exec_argv_;
  std::map<std::string, std::string> exec_env_;
  int exec_calls_ = 0;
  int exec_error_ = ENOENT;  // what the fake exec "fails" with (a real one does not return)
};

TEST_F(RunCommandTest, ExecsTheProgramWithTrainscopeEnvironment) {
  const int code = Run({"run", "--python-dir", dir_.string(), "--collector", "10.0.0.5:7070",
                        "--job", "resnet", "--token", "tok", "--dormant", "--", "/usr/bin/python3",
                        "train.py", "--epochs", "3", "--", "x"},
                       {{"PYTHONPATH", "/user/lib"}});
  ASSERT_EQ(exec_calls_, 1) << err_.str();
  // Everything after the first "--" is the program's, flags and "--" included.
  EXPECT_THAT(exec_argv_, ElementsAre("/usr/bin/python3", "train.py", "--epochs", "3", "--", "x"));
  EXPECT_EQ(exec_env_["TRAINSCOPE_COLLECTOR"], "10.0.0.5:7070");
  EXPECT_EQ(exec_env_["TRAINSCOPE_JOB"], "resnet");
  EXPECT_EQ(exec_env_["TRAINSCOPE_TOKEN"], "tok");
  EXPECT_EQ(exec_env_["TRAINSCOPE_DORMANT"], "1");
  const std::string site = (dir_ / "sitecustomize").string();
  EXPECT_EQ(exec_env_["PYTHONPATH"], site + ":" + dir_.string() + ":/user/lib");
  // The fake exec returned: run reports it as a failure naming the program.
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err_.str(), HasSubstr("cannot run '/usr/bin/python3'"));
}

TEST_F(RunCommandTest, DefaultsComeFromTheEnvironment) {
  Run({"run", "--", "python3", "t.py"},
      {{"TRAINSCOPE_PYTHON_DIR", dir_.string()}, {"TRAINSCOPE_COLLECTOR", "h:1"}});
  ASSERT_EQ(exec_calls_, 1) << err_.str();
  EXPECT_EQ(exec_env_["TRAINSCOPE_COLLECTOR"], "h:1");
  EXPECT_EQ(exec_env_.count("TRAINSCOPE_JOB"), 0u);  // the process's own default applies
  EXPECT_EQ(exec_env_.count("TRAINSCOPE_DORMANT"), 0u);
  EXPECT_EQ(exec_env_["PYTHONPATH"], (dir_ / "sitecustomize").string() + ":" + dir_.string());
}

TEST_F(RunCommandTest, UsageErrorsNeverExec) {
  EXPECT_EQ(Run({"run", "--python-dir", dir_.string()}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("missing '-- PROGRAM [ARGS...]'"));
  EXPECT_EQ(Run({"run", "--python-dir", dir_.string(), "--"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("missing PROGRAM after '--'"));
  EXPECT_EQ(Run({"run", "--python-dir", dir_.string(), "python3", "t.py"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unexpected argument 'python3'; put the program after '--'"));
  EXPECT_EQ(Run({"run", "--job", "bad job!", "--python-dir", dir_.string(), "--", "x"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--job: 'bad job!' (8 bytes) is not a valid job id"));
  EXPECT_EQ(Run({"run", "--bogus", "--", "x"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unknown flag --bogus"));
  EXPECT_EQ(exec_calls_, 0);
}

TEST_F(RunCommandTest, HelpShowsTheProgramForm) {
  EXPECT_EQ(Run({"run", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("Usage: trainscope run [flags] -- PROGRAM [ARGS...]"));
  EXPECT_THAT(out_.str(), HasSubstr("--dormant"));
  EXPECT_EQ(exec_calls_, 0);
}

TEST_F(RunCommandTest, AMissingPluginNamesWhereItLooked) {
  std::filesystem::remove(dir_ / "sitecustomize" / "sitecustomize.py");
  EXPECT_EQ(Run({"run", "--python-dir", dir_.string(), "--", "x"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("no sitecustomize/sitecustomize.py"));
  EXPECT_THAT(err_.str(), HasSubstr(dir_.string()));
  EXPECT_EQ(exec_calls_, 0);
}

TEST(PluginLocatorTest, FindsThePackageNextToTheBinary) {
  char pattern[] = "/tmp/trainscope-locator-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::filesystem::path root = pattern;
  std::filesystem::create_directories(root / "bin");
  std::filesystem::create_directories(root / "python" / "trainscope");
  std::ofstream(root / "python" / "trainscope" / "__init__.py") << "\n";
  auto no_env = [](std::string_view) { return std::optional<std::string>(); };
  absl::StatusOr<PluginPaths> found =
      PluginLocator::Locate(std::nullopt, no_env, root / "bin" / "trainscope", false);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->python_dir, root / "python");
  EXPECT_EQ(found->sitecustomize_dir, root / "python" / "sitecustomize");
  // `run` also needs the sitecustomize.
  EXPECT_FALSE(PluginLocator::Locate(std::nullopt, no_env, root / "bin" / "trainscope", true).ok());
  std::filesystem::create_directories(root / "python" / "sitecustomize");
  std::ofstream(root / "python" / "sitecustomize" / "sitecustomize.py") << "\n";
  EXPECT_TRUE(PluginLocator::Locate(std::nullopt, no_env, root / "bin" / "trainscope", true).ok());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace trainscope::cli
