// ProcessTable over a fake /proc (directories with status, cmdline, maps and
// an exe link), so that matching and the checks are tested with any process
// tree; and over the real /proc for one live process.
#include "trainscope/cli/process_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trainscope::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FakeProc {
 public:
  FakeProc() {
    char pattern[] = "/tmp/trainscope-fakeproc-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  ~FakeProc() { std::filesystem::remove_all(root_); }
  const std::filesystem::path& root() const { return root_; }

  // argv joined by '\0' in cmdline; maps lists `libs`.
  void Add(pid_t pid, pid_t parent, const std::string& exe, std::vector<std::string> argv,
           std::vector<std::string> libs, char state = 'S', pid_t tracer = 0) {
    const std::filesystem::path dir = root_ / std::to_string(pid);
    std::filesystem::create_directories(dir);
    const std::string name = std::filesystem::path(exe).filename().string();
    std::ofstream(dir / "status") << "Name:\t" << name << "\nState:\t" << state
                                  << " (sleeping)\nPid:\t" << pid << "\nPPid:\t" << parent
                                  << "\nTracerPid:\t" << tracer << "\nUid:\t" << getuid() << "\t"
                                  << getuid() << "\t" << getuid() << "\t" << getuid() << "\n";
    std::ofstream cmdline(dir / "cmdline", std::ios::binary);
    for (const std::string& a : argv) cmdline << a << '\0';
    std::ofstream maps(dir / "maps");
    maps << "00400000-00401000 r-xp 00000000 08:01 1 " << exe << "\n";
    for (const std::string& lib : libs)
      maps << "7f0000000000-7f0000001000 r-xp 00000000 08:01 2 " << lib << "\n";
    std::filesystem::create_symlink(exe, dir / "exe");
  }
  void SetPtraceScope(int scope) {
    std::filesystem::create_directories(root_ / "sys/kernel/yama");
    std::ofstream(root_ / "sys/kernel/yama/ptrace_scope") << scope << "\n";
  }

 private:
  std::filesystem::path root_;
};

constexpr char kTorch[] = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13";
constexpr char kPython[] = "/usr/bin/python3.11";

std::vector<pid_t> Pids(const std::vector<ProcessInfo>& infos) {
  std::vector<pid_t> out;
  for (const ProcessInfo& i : infos) out.push_back(i.pid);
  return out;
}

TEST(ProcessTableTest, InspectReadsIdentityAndWhatIsLoaded) {
  FakeProc proc;
  proc.Add(200, 1, kPython, {"/usr/bin/python3", "train.py", "--lr", "0.1"}, {kTorch});
  proc.Add(300, 1, "/usr/bin/sleep", {"sleep", "30"}, {"/usr/lib/libc.so.6"});
  proc.Add(400, 1, "/opt/conda/bin/python", {"python", "x.py"},
           {"/opt/conda/lib/libpython3.10.so"});
  ProcessTable table(proc.root());
  absl::StatusOr<ProcessInfo> train = table.Inspect(200);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->parent, 1);
  EXPECT_EQ(train->cmdline, "/usr/bin/python3 train.py --lr 0.1");
  EXPECT_TRUE(train->python);
  EXPECT_TRUE(train->torch);
  EXPECT_EQ(train->Describe(), "200 (/usr/bin/python3 train.py --lr 0.1)");
  EXPECT_FALSE(table.Inspect(300)->python);
  EXPECT_TRUE(table.Inspect(400)->python);  // by its libpython
  EXPECT_FALSE(table.Inspect(400)->torch);
  absl::StatusOr<ProcessInfo> missing = table.Inspect(999);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("no process with pid 999"));
}

TEST(ProcessTableTest, ChecksSayWhichRequirementFailed) {
  FakeProc proc;
  proc.Add(200, 1, kPython, {"python3", "train.py"}, {kTorch});
  proc.Add(300, 1, "/usr/bin/sleep", {"sleep", "30"}, {});
  proc.Add(400, 1, kPython, {"python3", "-c", "pass"}, {});
  proc.Add(500, 1, kPython, {"python3", "t.py"}, {kTorch}, 'Z');
  proc.Add(600, 1, kPython, {"python3", "t.py"}, {kTorch}, 'S', /*tracer=*/77);
  ProcessTable table(proc.root());
  auto check = [&](pid_t pid) { return table.CheckInjectable(*table.Inspect(pid)); };
  EXPECT_TRUE(check(200).ok()) << check(200);
  EXPECT_THAT(std::string(check(300).message()),
              HasSubstr("pid 300 (sleep 30) is not a Python process"));
  EXPECT_THAT(std::string(check(400).message()), HasSubstr("has not loaded PyTorch"));
  EXPECT_THAT(std::string(check(500).message()), HasSubstr("has exited"));
  EXPECT_THAT(std::string(check(600).message()), HasSubstr("already being traced by pid 77"));
}

TEST(ProcessTableTest, PtraceScopeThreeRefusesEvenRootNamingTheSetting) {
  FakeProc proc;
  proc.Add(200, 1, kPython, {"python3", "train.py"}, {kTorch});
  proc.SetPtraceScope(3);
  ProcessTable table(proc.root());
  absl::Status s = table.CheckInjectable(*table.Inspect(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/proc/sys/kernel/yama/ptrace_scope is 3"));
}

TEST(ProcessTableTest, MatchFindsSpawnedRanksAndSkipsLaunchers) {
  FakeProc proc;
  // torch.multiprocessing.spawn: the parent runs train.py, the ranks `python -c ...`.
  proc.Add(200, 1, kPython, {"/usr/bin/python3", "train.py"}, {kTorch});
  proc.Add(201, 200, kPython,
           {"/usr/bin/python3", "-c", "from multiprocessing.spawn import spawn_main"}, {kTorch});
  proc.Add(202, 200, kPython,
           {"/usr/bin/python3", "-c", "from multiprocessing.spawn import spawn_main"}, {kTorch});
  proc.Add(203, 200, kPython, {"/usr/bin/python3", "-c", "resource_tracker"}, {});
  // Unrelated: another job, and a non-Python process naming the pattern.
  proc.Add(300, 1, kPython, {"/usr/bin/python3", "other.py"}, {kTorch});
  proc.Add(400, 1, "/usr/bin/tail", {"tail", "-f", "train.py.log"}, {});
  ProcessTable table(proc.root());
  absl::StatusOr<std::vector<ProcessInfo>> matched = table.MatchTrainingProcesses("train.py");
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_THAT(Pids(*matched), ElementsAre(201, 202));
}

TEST(ProcessTableTest, MatchSkipsTorchrunsAgent) {
  FakeProc proc;
  proc.Add(500, 1, kPython, {"python3", "-m", "torch.distributed.run", "train.py"}, {kTorch});
  proc.Add(501, 500, kPython, {"python3", "-u", "train.py"}, {kTorch});
  proc.Add(502, 500, kPython, {"python3", "-u", "train.py"}, {kTorch});
  ProcessTable table(proc.root());
  absl::StatusOr<std::vector<ProcessInfo>> matched = table.MatchTrainingProcesses("train.py");
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_THAT(Pids(*matched), ElementsAre(501, 502));
}

TEST(ProcessTableTest, ASingleProcessJobIsItsOwnRank) {
  FakeProc proc;
  proc.Add(200, 1, kPython, {"python3", "train.py"}, {kTorch});
  proc.Add(201, 200, kPython, {"python3", "-c", "dataloader worker"}, {});  // no torch mapped
  ProcessTable table(proc.root());
  EXPECT_THAT(Pids(*table.MatchTrainingProcesses("train.py")), ElementsAre(200));
}

TEST(ProcessTableTest, MatchExplainsWhyNothingQualified) {
  FakeProc proc;
  proc.Add(400, 1, "/usr/bin/tail", {"tail", "-f", "train.log"}, {});
  proc.Add(401, 1, kPython, {"python3", "train_no_torch.py"}, {});
  ProcessTable table(proc.root());
  absl::StatusOr<std::vector<ProcessInfo>> none = table.MatchTrainingProcesses("train");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("no PyTorch process matches 'train'"));
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("not Python"));
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no PyTorch loaded"));
  EXPECT_THAT(std::string(table.MatchTrainingProcesses("zzz").status().message()),
              HasSubstr("no process matches 'zzz'"));
}

TEST(ProcessTableTest, TheRealProcSeesThisTest) {
  ProcessTable table;
  absl::StatusOr<ProcessInfo> self = table.Inspect(getpid());
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_EQ(self->parent, getppid());
  EXPECT_TRUE(self->maps_readable);
  EXPECT_FALSE(self->python);
}

TEST(ParsePidTest, AcceptsOnlyPositiveNumbers) {
  EXPECT_EQ(*ParsePid("1234"), 1234);
  for (const char* bad : {"", "0", "-5", "12ab", "99999999999"}) {
    absl::StatusOr<pid_t> pid = ParsePid(bad);
    EXPECT_FALSE(pid.ok()) << bad;
    EXPECT_THAT(std::string(pid.status().message()), HasSubstr("--pid expects a process id"));
  }
}

}  // namespace
}  // namespace trainscope::cli
