// A collector's place in the tier (docs/scale.md), from its flags: a node
// collector (--publish) runs a NodePublisher and a CommandListener, a
// job-level collector (--upstream) an UpstreamConsumer; one collector may be
// both (a rack collector between nodes and the job level), or neither.
//
// Usage (trainscope-collector's main):
//   ASSIGN_OR_RETURN(auto tier, TierRole::Create(options));   // flags checked here
//   server_options.record_sink = tier->record_sink();          // null unless --publish
//   auto server = CollectorServer::Start(server_options);
//   tier->Start(&server->registry(), &server->counters());
//   tier->FillStatus(&status);  // any thread: `trainscope status`, /metrics
//   ... on SIGTERM:
//   tier->StopIntake();       // no more commands or upstream records
//   server->Shutdown(...);
//   tier->StopPublishing();   // drain what the last commits handed over
//
// Threading: Create, Start and the Stops from one thread (main); FillStatus
// from any thread (gRPC and scrape threads), before, during or after Start.
#ifndef TRAINSCOPE_TIER_TIER_ROLE_H_
#define TRAINSCOPE_TIER_TIER_ROLE_H_

#include <filesystem>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/bad_input_counters.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/collector/publish/record_sink.h"
#include "trainscope/tier/command_listener.h"
#include "trainscope/tier/nats_client.h"
#include "trainscope/tier/node_publisher.h"
#include "trainscope/tier/upstream_consumer.h"
#include "trainscope/v1/commands.pb.h"

namespace trainscope::tier {

struct TierRoleOptions {
  std::string publish;         // --publish nats://...: be a node collector
  std::string upstream;        // --upstream nats://...: be the job-level collector
  std::string node;            // --node-name (default: the host name)
  std::string publish_events;  // --publish-events: "all" or "summary"
  uint64_t publish_buffer_mb = 256;
  std::string durable;                // --nats-durable
  std::string upstream_job;           // --upstream-job: consume one job's records only
  int ack_wait_s = 10;                // --nats-ack-wait-s
  int max_age_s = 86400;              // --nats-max-age-s
  int duplicate_window_ms = 120'000;  // --nats-duplicate-window-ms (JetStream's dedup)
  NatsConfig nats;                    // TLS and credentials (url filled per role)
  std::filesystem::path data_dir;
};

class TierRole {
 public:
  // INVALID_ARGUMENT naming the flag for bad flags; OK with no role at all.
  static absl::StatusOr<std::unique_ptr<TierRole>> Create(TierRoleOptions options);

  collector::RecordSink* record_sink() { return publisher_.get(); }
  void Start(collector::JobRegistry* registry, collector::BadInputCounters* counters);
  void StopIntake();
  void StopPublishing();

  NodePublisher* publisher() { return publisher_.get(); }
  UpstreamConsumer* consumer() {
    base::MutexLock lock(&consumer_mu_);
    return consumer_.get();
  }

  // The role, the NATS URLs without credentials and the publisher's and
  // consumer's counters; leaves `status` untouched when there is no role.
  void FillStatus(trainscope::v1::TierStatus* status);

 private:
  explicit TierRole(TierRoleOptions options) : options_(std::move(options)) {}
  const TierRoleOptions options_;
  std::unique_ptr<NodePublisher> publisher_;
  std::unique_ptr<CommandListener> listener_;
  // Set by Start while gRPC threads may already read it through FillStatus.
  base::Mutex consumer_mu_;
  std::unique_ptr<UpstreamConsumer> consumer_ ABSL_GUARDED_BY(consumer_mu_);
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_TIER_ROLE_H_
