// trainscope-collector: gathers the agents of distributed training jobs,
// logs everything durably before acknowledging it, and serves the live feed.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/adapters/collector_flags.h"
#include "trainscope/collector/adapters/collector_server.h"
#include "trainscope/collector/adapters/grpc_agent_service.h"
#include "trainscope/collector/analysis/rules_config.h"
#include "trainscope/collector/store/data_dir_files.h"
#include "trainscope/collector/store/stored_jobs.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/tier/tier_role.h"

namespace {

constexpr int kBadFlags = 2;

int Fail(const std::string& message) {
  std::fprintf(stderr, "trainscope-collector: %s\n", message.c_str());
  return kBadFlags;
}

bool WritePortFile(const std::string& path, const std::string& content, std::string* error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      *error = "cannot write " + tmp;
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // atomic: readers never see half a file
  if (ec) {
    *error = "cannot rename " + tmp + " to " + path + ": " + ec.message();
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Every flag, its default and its checks: collector_flags.h.
  absl::StatusOr<trainscope::collector::CollectorCommandLine> line =
      trainscope::collector::ParseCollectorCommandLine(argc, argv);
  if (!line.ok()) return Fail(std::string(line.status().message()));
  if (line->help) {
    std::fputs(trainscope::collector::CollectorUsage().c_str(), stdout);
    return 0;
  }
  if (line->version) {
    std::printf("trainscope-collector %s\n", trainscope::kTrainscopeVersion);
    return 0;
  }
  if (line->print_default_rules) {
    std::fputs(trainscope::collector::DefaultRulesText().c_str(), stdout);
    return 0;
  }
  const trainscope::collector::RetentionPolicy retention = line->retention;

  // Signals are taken synchronously by main; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  trainscope::collector::CollectorServerOptions options = std::move(line->server);

  // Private to the collector's user and group (0750), whatever the umask.
  if (absl::Status created =
          trainscope::collector::CreateDataDirectories(options.data_dir / "jobs");
      !created.ok()) {
    return Fail(absl::StrCat("--data-dir: ", created.message()));
  }
  // Before the server: its pipelines hand their records to the publisher.
  auto tier = trainscope::tier::TierRole::Create(line->tier);
  if (!tier.ok()) return Fail(std::string(tier.status().message()));
  options.record_sink = (*tier)->record_sink();
  options.tier_status = [role = tier->get()](trainscope::v1::TierStatus* status) {
    role->FillStatus(status);
  };
  auto server = trainscope::collector::CollectorServer::Start(options);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  (*tier)->Start(&(*server)->registry(), &(*server)->counters());

  const std::string& port_file = line->port_file;
  if (!port_file.empty()) {
    std::string error;
    if (!WritePortFile(port_file,
                       absl::StrCat("agents=", (*server)->agents_address(),
                                    "\nfeed=", (*server)->feed_endpoint(),
                                    "\nsnapshot=", (*server)->snapshot_endpoint(), "\n",
                                    (*server)->metrics_port() > 0
                                        ? absl::StrCat("metrics=", line->metrics_host, ":",
                                                       (*server)->metrics_port(), "\n")
                                        : ""),
                       &error)) {
      (*server)->Shutdown(absl::Seconds(1));
      return Fail("--port-file: " + error);
    }
  }
  std::printf("trainscope-collector ready: agents %s, feed %s, snapshot %s, data %s%s\n",
              (*server)->agents_address().c_str(), (*server)->feed_endpoint().c_str(),
              (*server)->snapshot_endpoint().c_str(), options.data_dir.string().c_str(),
              (*server)->metrics_port() > 0
                  ? absl::StrCat(", metrics http://", line->metrics_host, ":",
                                 (*server)->metrics_port(), "/metrics")
                        .c_str()
                  : "");
  std::fflush(stdout);

  // Retention at start, then hourly while waiting for a signal.
  (*server)->registry().ApplyRetention(retention, absl::Now());
  int signal_number = 0;
  while (signal_number <= 0) {
    const struct timespec retention_period = {.tv_sec = 3600, .tv_nsec = 0};
    signal_number = sigtimedwait(&signals, nullptr, &retention_period);
    if (signal_number < 0 && errno == EAGAIN) {
      (*server)->registry().ApplyRetention(retention, absl::Now());
    }
  }
  std::fprintf(stderr, "trainscope-collector: %s received, shutting down\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  // A second signal during the shutdown kills at once (default action).
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
  (*tier)->StopIntake();
  (*server)->Shutdown(absl::Seconds(5));
  (*tier)->StopPublishing();
  const auto counts = (*server)->counters().Snapshot();
  if (!counts.empty()) {
    std::string line = "trainscope-collector: bad input seen:";
    for (const auto& [cause, count] : counts) absl::StrAppend(&line, " ", cause, "=", count);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fprintf(stderr,
               "trainscope-collector: stopped; %llu streams served, %llu feed updates "
               "published, %llu dropped\n",
               static_cast<unsigned long long>((*server)->agent_service().streams_served()),
               static_cast<unsigned long long>((*server)->publisher().published()),
               static_cast<unsigned long long>((*server)->publisher().dropped()));
  return 0;
}
