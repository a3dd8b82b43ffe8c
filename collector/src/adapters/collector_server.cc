#include "trainscope/collector/adapters/collector_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "trainscope/collector/adapters/grpc_agent_service.h"
#include "trainscope/collector/adapters/grpc_commands_service.h"
#include "trainscope/security/curve_keys.h"
#include "trainscope/security/listen_exposure.h"

namespace trainscope::collector {
namespace {

// Splits "HOST:PORT" (HOST may be "[v6]") and checks the port.
absl::Status ParseListenAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), port) || *port < 0 ||
      *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: '", address,
                     "' is not HOST:PORT (e.g. 127.0.0.1:7070; port 0 picks a free one)"));
  }
  *host = address.substr(0, colon);
  return absl::OkStatus();
}

absl::Status CheckDataDir(const std::filesystem::path& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir / "jobs", ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data-dir: cannot create '", (data_dir / "jobs").string(), "': ", ec.message()));
  }
  const std::filesystem::path probe = data_dir / ".write-test";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, "x", 1) != 1) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("--data-dir: '", data_dir.string(), "' is not writable: ", error));
  }
  ::close(fd);
  std::filesystem::remove(probe, ec);
  return absl::OkStatus();
}

// A port beyond loopback must be encrypted and its reads gated, unless
// --insecure: job data (operators, steps, loss reports) is the user's.
absl::Status CheckExposure(const CollectorServerOptions& options) {
  if (options.insecure) return absl::OkStatus();
  constexpr absl::string_view kOr =
      ", or --insecure to serve it unencrypted on a network you trust (docs/security.md)";
  if (!security::IsLoopbackGrpcAddress(options.listen)) {
    if (!options.tls.enabled()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--listen ", options.listen,
          " is beyond loopback: refusing to serve agents and commands without TLS; give "
          "--tls-cert and --tls-key (and --tls-client-ca for mutual TLS)",
          kOr));
    }
    if (!options.tls.mutual() && options.read_token_file.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--listen ", options.listen,
          " is beyond loopback: refusing to let anyone read the jobs; give --tls-client-ca "
          "(mutual TLS: only clients with a certificate it signed) or --read-token-file",
          kOr));
    }
  }
  for (const auto& [endpoint, flag] :
       {std::pair<const std::string&, absl::string_view>{options.feed, "--feed"},
        std::pair<const std::string&, absl::string_view>{options.snapshot, "--snapshot"}}) {
    if (security::IsLoopbackZmqEndpoint(endpoint)) continue;
    if (options.curve_secret_key_file.empty() || options.curve_client_keys_file.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(flag, " ", endpoint,
                       " is beyond loopback: refusing to publish job data without CURVE; give "
                       "--curve-secret-key (the collector's key, from trainscope-curve-keygen) and "
                       "--curve-client-keys (the public keys of the viewers and CLIs allowed)",
                       kOr));
    }
  }
  if (!options.metrics.empty() && !security::IsLoopbackGrpcAddress(options.metrics)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--metrics-host: ", options.metrics,
        " is beyond loopback and the metrics endpoint has no encryption or authentication: "
        "keep it on 127.0.0.1 behind a proxy that has them",
        kOr));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--read-token-file: cannot read '", path, "': ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(contents.str()));
  if (token.size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("--read-token-file: '", path, "' holds ", token.size(),
                     " characters; expected a token of at least 16 (e.g. `openssl rand -hex 32`)"));
  }
  return token;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CollectorServer>> CollectorServer::Start(
    CollectorServerOptions options) {
  std::string host;
  int port = 0;
  if (absl::Status s = ParseListenAddress(options.listen, &host, &port); !s.ok()) return s;
  if (options.max_message_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-message-bytes: ", options.max_message_bytes,
                     " is too small; expected at least 1024"));
  }
  if (absl::Status s = CheckExposure(options); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      security::MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  std::string read_token;
  if (!options.read_token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(options.read_token_file);
    if (!token.ok()) return token.status();
    read_token = std::move(*token);
  }
  ZmqFeedPublisher::Options feed_options;
  feed_options.feed_endpoint = options.feed;
  feed_options.snapshot_endpoint = options.snapshot;
  if (!options.curve_secret_key_file.empty()) {
    absl::StatusOr<security::CurveKeyPair> curve =
        security::LoadCurveSecretKeyFile(options.curve_secret_key_file, "--curve-secret-key");
    if (!curve.ok()) return curve.status();
    feed_options.curve = std::move(*curve);
  }
  if (!options.curve_client_keys_file.empty()) {
    if (!feed_options.curve.has_value()) {
      return absl::InvalidArgumentError(
          "--curve-client-keys needs --curve-secret-key: the client list gates CURVE "
          "handshakes, and without the collector's own key there are none");
    }
    absl::StatusOr<std::set<std::string>> clients =
        security::LoadCurvePublicKeyList(options.curve_client_keys_file, "--curve-client-keys");
    if (!clients.ok()) return clients.status();
    feed_options.curve_clients = std::move(*clients);
  }
  if (absl::Status s = CheckDataDir(options.data_dir); !s.ok()) return s;

  std::unique_ptr<CollectorServer> server(new CollectorServer());
  server->options_ = options;
  server->counters_ = std::make_unique<BadInputCounters>();
  server->budget_ = std::make_unique<IngestBudget>(options.max_queued_bytes);

  absl::StatusOr<std::unique_ptr<ZmqFeedPublisher>> publisher =
      ZmqFeedPublisher::Bind(feed_options);
  if (!publisher.ok()) return publisher.status();
  server->publisher_ = std::move(*publisher);
  FeedSink* feed = server->publisher_.get();
  if (!options.metrics.empty()) {
    absl::StatusOr<std::unique_ptr<PrometheusMetrics>> metrics =
        PrometheusMetrics::Start(options.metrics, feed, options.tier_status);
    if (!metrics.ok()) return metrics.status();
    server->metrics_ = std::move(*metrics);
    feed = server->metrics_.get();
  }

  JobPipelineOptions pipeline_options;
  pipeline_options.data_dir = options.data_dir;
  pipeline_options.segment_bytes = options.segment_bytes;
  pipeline_options.fsync = options.fsync;
  pipeline_options.use_index = options.use_index;
  pipeline_options.feed = feed;
  pipeline_options.counters = server->counters_.get();
  pipeline_options.probe_interval = options.probe_interval;
  pipeline_options.halt_step_margin = options.halt_step_margin;
  pipeline_options.halt_lead = options.halt_lead;
  pipeline_options.lost_device_grace = options.lost_device_grace;
  pipeline_options.lost_device_grace_steps = options.lost_device_grace_steps;
  pipeline_options.analysis = options.analysis;
  pipeline_options.analyzer = options.analyzer;
  pipeline_options.release_finished_after = options.release_finished_after;
  pipeline_options.rules = options.rules;
  pipeline_options.halt_policy = options.halt_policy;
  pipeline_options.max_message_bytes = static_cast<uint64_t>(options.max_message_bytes);
  pipeline_options.notice = options.notice;
  pipeline_options.record_sink = options.record_sink;
  server->registry_ = std::make_unique<JobRegistry>(pipeline_options, options.max_jobs);
  if (absl::Status s = server->registry_->RecoverJobs(); !s.ok()) return s;

  JobRegistry* registry = server->registry_.get();
  const absl::Duration snapshot_timeout = options.snapshot_timeout;
  server->publisher_->Start([registry, snapshot_timeout](const v1::SnapshotRequest& request) {
    return registry->Snapshot(request, snapshot_timeout);
  });

  AgentSessionOptions session_options;
  session_options.max_in_flight = options.max_in_flight_per_stream;
  if (!options.job_key_file.empty()) {
    bool created = false;
    absl::StatusOr<security::JobKey> key =
        options.create_job_key_file
            ? security::JobKey::ReadOrCreateFile(options.job_key_file, "the default job key",
                                                 &created)
            : security::JobKey::ReadFile(options.job_key_file, "--job-key-file");
    if (!key.ok()) return key.status();
    if (created) {
      const std::string line = absl::StrCat("made the job key ", options.job_key_file,
                                            " (mode 0600): ranks prove membership with it "
                                            "(docs/security.md)");
      if (options.notice) {
        options.notice(line);
      } else {
        std::fprintf(stderr, "trainscope-collector: %s\n", line.c_str());
      }
    }
    session_options.job_key = std::make_shared<const security::JobKey>(*std::move(key));
  }
  if (options.memory_limit_bytes > 0) {
    MemoryLimiterOptions limiter;
    limiter.limit_bytes = options.memory_limit_bytes;
    session_options.memory_limiter = std::make_shared<MemoryLimiter>(std::move(limiter));
  }
  server->agent_service_ = std::make_unique<GrpcAgentService>(
      registry, server->budget_.get(), server->counters_.get(), session_options);
  server->commands_service_ =
      std::make_unique<GrpcCommandsService>(registry, read_token, options.tier_status);

  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(options.listen, *credentials, &selected_port);
  builder.RegisterService(server->agent_service_.get());
  builder.RegisterService(server->commands_service_.get());
  // Oversized messages are refused by gRPC itself (RESOURCE_EXHAUSTED), before decoding.
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // A busy port must fail here, not be shared with another collector.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Notice dead agents (a SIGKILLed host sends no FIN) and let agents ping us.
  const int keepalive_ms = static_cast<int>(absl::ToInt64Milliseconds(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, std::max(1000, keepalive_ms / 2));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || selected_port == 0) {
    server->server_.reset();
    return absl::UnavailableError(
        absl::StrCat("--listen: cannot listen for agents on ", options.listen, " (port ", port,
                     " in use, or the address is not local to this machine)"));
  }
  server->agents_address_ = absl::StrCat(host, ":", selected_port);
  return server;
}

void CollectorServer::Shutdown(absl::Duration deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  // Order: end the streams first (after their due acks; agents reconnect and
  // resume later) so they do not hold the gRPC shutdown up to its deadline,
  // then drain and sync the pipelines, then the feed.
  if (registry_) {
    registry_->EndStreams(absl::UnavailableError(
        "the collector is shutting down; reconnect to resume after the last acknowledged batch"));
  }
  if (server_)
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(deadline));
  if (registry_) registry_->Stop();
  if (publisher_) publisher_->Stop();
}

CollectorServer::~CollectorServer() {
  Shutdown(absl::Seconds(5));
  server_.reset();
}

}  // namespace trainscope::collector
