// The whole collector in one object: job registry (with recovery), the gRPC
// server (agent streams and commands) and the ZeroMQ live feed.
//
// Usage (main.cc, in-process tests):
//   CollectorServerOptions options;
//   options.listen = "127.0.0.1:0";                  // port 0: pick a free one
//   options.feed = options.snapshot = "tcp://127.0.0.1:*";
//   options.data_dir = dir;
//   ASSIGN_OR_RETURN(auto server, CollectorServer::Start(options));
//   server->agents_address();                        // "127.0.0.1:41234"
//   server->Shutdown(absl::Seconds(5));
//
// Start fails with a message naming the flag-level problem (bad address, busy
// port, unwritable data directory, a missing certificate or key) and leaves
// nothing running.
//
// Security (docs/security.md): `tls` puts TLS (mutual with a client CA) on
// the gRPC port, the CURVE key files put CURVE on the feed and snapshot
// ports, `read_token_file` gates the Commands service's reads (ListJobs,
// GetJobStatus). A port bound beyond loopback must be encrypted and gated
// (gRPC: TLS plus a client CA or a read token; ZeroMQ: CURVE plus a client
// list; the metrics endpoint, which has neither, not at all) unless
// `insecure`: Start refuses otherwise, naming the flags.
//
// Threading: Start/Shutdown from one owner thread; accessors are thread-safe.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_COLLECTOR_SERVER_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_COLLECTOR_SERVER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "trainscope/collector/adapters/prometheus_metrics.h"
#include "trainscope/collector/adapters/zmq_feed_publisher.h"
#include "trainscope/collector/bad_input_counters.h"
#include "trainscope/collector/ingest/ingest_budget.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/security/tls_credentials.h"

namespace grpc {
class Server;
}

namespace trainscope::collector {

class GrpcAgentService;
class GrpcCommandsService;

struct CollectorServerOptions {
  std::string listen = "127.0.0.1:7070";
  std::string feed = "tcp://127.0.0.1:7071";
  std::string snapshot = "tcp://127.0.0.1:7072";
  std::string metrics;  // HOST:PORT of the Prometheus endpoint; empty: none
  std::filesystem::path data_dir = "./trainscope-data";
  bool fsync = true;
  uint64_t segment_bytes = 64ull << 20;
  int max_message_bytes = kMaxMessageBytes;
  absl::Duration probe_interval = absl::Seconds(1);
  uint64_t halt_step_margin = 2;                // JobPipelineOptions::halt_step_margin
  absl::Duration halt_lead = absl::Seconds(1);  // JobPipelineOptions::halt_lead
  // JobPipelineOptions::lost_device_grace and lost_device_grace_steps.
  absl::Duration lost_device_grace = absl::Seconds(10);
  uint64_t lost_device_grace_steps = 3;
  bool analysis = true;         // JobPipelineOptions::analysis
  JobAnalyzerOptions analyzer;  // JobPipelineOptions::analyzer (budgets)
  absl::Duration release_finished_after = absl::Minutes(10);  // JobPipelineOptions's
  trainscope::v1::RulesConfig rules;                          // JobPipelineOptions::rules
  trainscope::v1::HaltPolicy halt_policy;                     // JobPipelineOptions::halt_policy
  uint64_t max_queued_bytes = 256ull << 20;
  RecordSink* record_sink = nullptr;  // JobPipelineOptions::record_sink (tier/ --publish)
  // Fills the tier's role and counters for ListJobs and /metrics (tier/
  // TierRole::FillStatus); null: no tier. Called from gRPC and scrape threads.
  TierStatusProvider tier_status;
  uint32_t max_in_flight_per_stream = 8;
  size_t max_jobs = 1024;
  bool use_index = true;
  absl::Duration keepalive_time = absl::Seconds(10);
  absl::Duration snapshot_timeout = absl::Seconds(2);
  std::function<void(absl::string_view)> notice;  // one-line notices; null: stderr

  // Transport security (see above).
  security::TlsServerConfig tls;       // --tls-cert, --tls-key, --tls-client-ca
  std::string curve_secret_key_file;   // --curve-secret-key
  std::string curve_client_keys_file;  // --curve-client-keys
  std::string read_token_file;         // --read-token-file
  // --job-key-file: every Hello must present its job's secret derived from
  // this key (security::JobKey), so no job id is first-come-first-served.
  // Empty: no key (--allow-unauthenticated-jobs; embedding tests), the first
  // rank of a job fixes its token. The binary always gives one by default.
  std::string job_key_file;
  // The default key (JobSecretSource::DefaultKeyPath): made if missing.
  bool create_job_key_file = false;
  // --memory-limit-mib: batches are refused while the process' RSS is over
  // 80 % of this (MemoryLimiter); 0: no limit.
  uint64_t memory_limit_bytes = 0;
  bool insecure = false;  // --insecure: serve beyond loopback without them
};

class CollectorServer {
 public:
  static absl::StatusOr<std::unique_ptr<CollectorServer>> Start(CollectorServerOptions options);
  ~CollectorServer();

  // Stops accepting, cancels streams still open after `deadline`, then drains
  // and syncs every pipeline. Idempotent.
  void Shutdown(absl::Duration deadline);

  const std::string& agents_address() const { return agents_address_; }
  const std::string& feed_endpoint() const { return publisher_->feed_endpoint(); }
  const std::string& snapshot_endpoint() const { return publisher_->snapshot_endpoint(); }
  JobRegistry& registry() { return *registry_; }
  BadInputCounters& counters() { return *counters_; }
  ZmqFeedPublisher& publisher() { return *publisher_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  GrpcAgentService& agent_service() { return *agent_service_; }

 private:
  CollectorServer() = default;

  CollectorServerOptions options_;
  std::string agents_address_;
  std::unique_ptr<BadInputCounters> counters_;
  std::unique_ptr<IngestBudget> budget_;
  std::unique_ptr<ZmqFeedPublisher> publisher_;
  std::unique_ptr<PrometheusMetrics> metrics_;  // before the feed, when served
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<GrpcAgentService> agent_service_;
  std::unique_ptr<GrpcCommandsService> commands_service_;
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_COLLECTOR_SERVER_H_
