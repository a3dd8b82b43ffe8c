// The `trainscope` binary: process setup (signals, environment, identity),
// then the subcommand dispatcher in the trainscope_cli library.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "trainscope/cli/cli.h"
#include "trainscope/cli/command_context.h"

namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true, std::memory_order_relaxed); }

// "user@host" for requested_by on commands that change a job.
std::string RequestedBy() {
  const char* user = std::getenv("USER");
  if (user == nullptr || *user == '\0') user = std::getenv("LOGNAME");
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(user != nullptr && *user != '\0' ? user : "unknown") + "@" +
         (host[0] != '\0' ? host : "unknown");
}

}  // namespace

int main(int argc, char** argv) {
  static_assert(std::atomic<bool>::is_always_lock_free,
                "the signal handler needs a lock-free flag");
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and re-check the flag
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);  // `trainscope tail J | head` ends on a write error, not a signal

  trainscope::cli::CommandContext ctx;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  ctx.env = trainscope::client::ProcessEnv();
  ctx.stop = &g_stop;
  ctx.time_zone = absl::LocalTimeZone();
  ctx.requested_by = RequestedBy();
  return trainscope::cli::RunCli(std::vector<std::string>(argv + 1, argv + argc), ctx);
}
