// `trainscope attach` / `detach` in-process: argument handling and the
// checks that run before any process is touched, against real processes
// (a `sleep`, a Python without torch) that must come out untouched. The
// injection itself is tested end to end in tests/python/test_attach.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "trainscope/cli/child_process.h"
#include "trainscope/cli/cli.h"
#include "trainscope/cli/process_table.h"
#include "trainscope/cli/python_injector.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class AttachCommandTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    CommandContext ctx;
    ctx.out = &out_;
    ctx.err = &err_;
    return RunCli(args, ctx);
  }

  // Starts argv and waits until it has exec'd (its exe is no longer ours).
  static ChildProcess StartAndWaitForExec(const std::vector<std::string>& argv,
                                          const std::string& exe_part) {
    absl::StatusOr<ChildProcess> child = ChildProcess::Start(argv);
    EXPECT_TRUE(child.ok()) << child.status();
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      std::error_code ec;
      auto exe =
          std::filesystem::read_symlink("/proc/" + std::to_string(child->pid()) + "/exe", ec);
      if (!ec && exe.string().find(exe_part) != std::string::npos) break;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return *std::move(child);
  }

  // Alive, and neither stopped nor traced: what "untouched" means here.
  static void ExpectUntouched(pid_t pid) {
    ASSERT_EQ(kill(pid, 0), 0) << "pid " << pid << " is gone";
    absl::StatusOr<ProcessInfo> info = ProcessTable().Inspect(pid);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_NE(info->state, 'T');
    EXPECT_NE(info->state, 't');
    EXPECT_EQ(info->tracer, 0);
  }

  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(AttachCommandTest, SayingNoProcessIsAUsageError) {
  for (const char* command : {"attach", "detach"}) {
    EXPECT_EQ(Run({command}), 2) << command;
    EXPECT_THAT(err_.str(), HasSubstr("--pid PID [PID...] or --match PATTERN"));
  }
}

TEST_F(AttachCommandTest, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(Run({"attach", "--pid", "12x"}), 2);
  EXPECT_THAT(err_.str(),
              HasSubstr("--pid expects a process id (a positive whole number), got '12x'"));
  EXPECT_EQ(Run({"attach", "--pid", "1", "--match", "train.py"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("either --pid or --match, not both"));
  EXPECT_EQ(Run({"attach", "123"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("process ids go after --pid"));
  EXPECT_EQ(Run({"attach", "--pid", "1", "--timeout", "0"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--timeout expects a number"));
  EXPECT_EQ(Run({"attach", "--pid", "1", "--job", "no spaces"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--job: 'no spaces' (9 bytes) is not a valid job id"));
  EXPECT_EQ(Run({"detach", "--match", ""}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--match needs a non-empty PATTERN"));
}

TEST_F(AttachCommandTest, HelpListsTheFlags) {
  EXPECT_EQ(Run({"attach", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("Usage: trainscope attach [PID...] [flags]"));
  for (const char* flag : {"--pid PID", "--match PATTERN", "--collector HOST:PORT", "--job JOB",
                           "--token TOKEN", "--dormant", "--timeout SECONDS", "--gdb PATH"}) {
    EXPECT_THAT(out_.str(), HasSubstr(flag));
  }
  EXPECT_EQ(Run({"detach", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("--match PATTERN"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("--collector")));
}

TEST_F(AttachCommandTest, APidThatDoesNotExistIsNamed) {
  // Far above any pid_max a test machine uses, yet a valid number.
  EXPECT_EQ(Run({"attach", "--pid", "4000000"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("no process with pid 4000000"));
  EXPECT_THAT(err_.str(), HasSubstr("nothing was done"));
  EXPECT_EQ(Run({"detach", "--pid", "4000000"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("no process with pid 4000000"));
}

TEST_F(AttachCommandTest, ANonPythonProcessIsRefusedAndLeftAlone) {
  ChildProcess sleeper = StartAndWaitForExec({"sleep", "30"}, "sleep");
  const std::string pid = std::to_string(sleeper.pid());
  EXPECT_EQ(Run({"attach", "--pid", pid}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("pid " + pid + " (sleep 30) is not a Python process"));
  ExpectUntouched(sleeper.pid());
  EXPECT_EQ(Run({"detach", "--pid", pid}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("is not a Python process"));
  ExpectUntouched(sleeper.pid());
}

TEST_F(AttachCommandTest, OneBadTargetMeansNoTargetIsTouched) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  ChildProcess sleeper = StartAndWaitForExec({"sleep", "30"}, "sleep");
  ChildProcess python =
      StartAndWaitForExec({"/usr/bin/python3", "-c", "import time; time.sleep(30)"}, "python");
  EXPECT_EQ(Run({"attach", "--pid", std::to_string(python.pid()), std::to_string(sleeper.pid())}),
            1);
  // Both problems are reported, not only the first.
  EXPECT_THAT(err_.str(), HasSubstr("is a Python process but has not loaded PyTorch"));
  EXPECT_THAT(err_.str(), HasSubstr("is not a Python process"));
  EXPECT_THAT(err_.str(), HasSubstr("no process was touched"));
  ExpectUntouched(python.pid());
  ExpectUntouched(sleeper.pid());
}

TEST_F(AttachCommandTest, AMatchWithNoTrainingProcessIsNamed) {
  EXPECT_EQ(Run({"attach", "--match", "no-such-training-script-f00d.py"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("no process matches 'no-such-training-script-f00d.py'"));
}

TEST_F(AttachCommandTest, AMissingGdbIsNamedBeforeAnythingIsTouched) {
  // gdb is checked after the targets, so this needs a PyTorch process;
  // the check itself is direct.
  EXPECT_FALSE(ProgramOnPath("/nonexistent/gdb"));
  EXPECT_TRUE(ProgramOnPath("sh"));
}

TEST(PythonInjectorTest, GdbOutputIsInterpreted) {
  EXPECT_TRUE(PythonInjector::InterpretGdbOutput(
                  7, "0x00007f in __GI___wait4 ()\n$1 = 0\n[Inferior 1 (process 7) detached]\n")
                  .ok());
  absl::Status full = PythonInjector::InterpretGdbOutput(7, "$1 = -1\n");
  EXPECT_THAT(std::string(full.message()), HasSubstr("returned -1"));
  absl::Status eperm =
      PythonInjector::InterpretGdbOutput(7,
                                         "Could not attach to process.  If your uid matches ...\n"
                                         "ptrace: Operation not permitted.\n");
  EXPECT_EQ(eperm.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(eperm.message()), HasSubstr("/proc/sys/kernel/yama/ptrace_scope"));
  absl::Status symbols = PythonInjector::InterpretGdbOutput(
      7, "No symbol \"Py_AddPendingCall\" in current context.\n");
  EXPECT_THAT(std::string(symbols.message()), HasSubstr("no Python C API"));
  absl::Status gone = PythonInjector::InterpretGdbOutput(7, "ptrace: No such process.\n");
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  absl::Status other = PythonInjector::InterpretGdbOutput(7, "something\nodd happened\n");
  EXPECT_THAT(std::string(other.message()), HasSubstr("something | odd happened"));
}

TEST(PythonInjectorTest, ThePendingCallNeverRaisesAndLeavesMainAlone) {
  const std::string source = PythonInjector::PendingCallSource("/tmp/trainscope-inject-ab", 42);
  EXPECT_THAT(source, HasSubstr("try:\n"));
  EXPECT_THAT(source, HasSubstr("except BaseException:\n pass\n"));
  EXPECT_THAT(source, HasSubstr("open('/tmp/trainscope-inject-ab/bootstrap.py')"));
  EXPECT_THAT(source, HasSubstr("'__trainscope_pid__':42"));
  // No double quote: it goes inside a C string literal on gdb's command line.
  EXPECT_EQ(source.find('"'), std::string::npos);
  PythonInjector injector({});
  const std::vector<std::string> argv = injector.GdbArgv(42, "a\"b\nc");
  EXPECT_EQ(argv[0], "gdb");
  const std::string call = argv[argv.size() - 5];
  EXPECT_THAT(call, HasSubstr("Py_AddPendingCall"));
  EXPECT_THAT(call, HasSubstr("strdup(\"a\\\"b\\nc\")"));
}

TEST(PythonInjectorTest, TheBootstrapRunsInAPythonThatHasNoTrainscope) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  // Run the bootstrap the way the target would, with a python_dir that has
  // no trainscope: it must write an error to status.json, not raise.
  char pattern[] = "/tmp/trainscope-bootstrap-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::filesystem::path dir = pattern;
  std::ofstream(dir / "bootstrap.py") << PythonInjector::BootstrapSource();
  std::ofstream(dir / "config.json") << R"({"action":"attach","python_dir":")" << dir.string()
                                     << R"(/none","deadline_unix":1e12})";
  absl::StatusOr<ChildProcess> python =
      ChildProcess::Start({"/usr/bin/python3", "-c",
                           PythonInjector::PendingCallSource(dir, 1) + "print('main goes on')\n"});
  ASSERT_TRUE(python.ok());
  ChildResult result = python->Wait(absl::Now() + absl::Seconds(20));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("main goes on"));
  std::ifstream in(dir / "status.json");
  std::stringstream status;
  status << in.rdbuf();
  EXPECT_THAT(status.str(), HasSubstr("\"ok\": false"));
  EXPECT_THAT(status.str(), HasSubstr("No module named 'trainscope"));
  std::filesystem::remove_all(dir);
}

TEST(ChildProcessTest, ATimeoutKillsTheChild) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Start({"sleep", "30"});
  ASSERT_TRUE(child.ok());
  const pid_t pid = child->pid();
  ChildResult result = child->Wait(absl::Now() + absl::Milliseconds(200));
  EXPECT_TRUE(result.timed_out);
  EXPECT_NE(kill(pid, 0), 0) << "killed and reaped";
}

TEST(ChildProcessTest, OutputAndExitCode) {
  absl::StatusOr<ChildProcess> child =
      ChildProcess::Start({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(child.ok());
  ChildResult result = child->Wait(absl::Now() + absl::Seconds(10));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_THAT(result.output, HasSubstr("out"));
  EXPECT_THAT(result.output, HasSubstr("err"));
  EXPECT_EQ(ChildProcess::Start({"no-such-program-xyz"}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace trainscope::cli
