#include "subprocess.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

extern char** environ;

namespace trainscope::testing {

Subprocess::Subprocess(std::vector<std::string> argv, std::filesystem::path output_prefix)
    : argv_(std::move(argv)), output_prefix_(std::move(output_prefix)) {}

Subprocess::~Subprocess() {
  if (running()) {
    Signal(SIGKILL);
    (void)Wait(absl::Seconds(10));
  }
}

absl::Status Subprocess::Start() {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = output_prefix_.string() + ".out";
  const std::string err = output_prefix_.string() + ".err";
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  exit_code_.reset();
  const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return absl::InternalError(absl::StrCat("cannot start ", argv_[0], ": ", std::strerror(rc)));
  }
  return absl::OkStatus();
}

void Subprocess::Signal(int signal) {
  if (running()) ::kill(pid_, signal);
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  if (exit_code_.has_value()) return *exit_code_;
  if (pid_ <= 0) return absl::FailedPreconditionError("process was never started");
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return *exit_code_;
    }
    if (r < 0 && errno != EINTR) return absl::InternalError(std::strerror(errno));
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "still running after ", absl::FormatDuration(timeout), ": ", absl::StrJoin(argv_, " ")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string Subprocess::Stdout() const { return ReadFile(output_prefix_.string() + ".out"); }
std::string Subprocess::Stderr() const { return ReadFile(output_prefix_.string() + ".err"); }

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int PickFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::filesystem::path MakeTempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              absl::StrCat("trainscope-", info->test_suite_name(), "-",
                                           info->name(), "-", ::getpid(), "-", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace trainscope::testing
