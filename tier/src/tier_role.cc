#include "trainscope/tier/tier_role.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "trainscope/proto/job_id.h"
#include "trainscope/tier/tier_subjects.h"

namespace trainscope::tier {
namespace {

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "node";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TierRole>> TierRole::Create(TierRoleOptions options) {
  if (options.node.empty()) options.node = HostName();
  if (absl::Status s = ValidateNodeName(options.node, "--node-name"); !s.ok()) return s;
  if (options.publish_events.empty()) options.publish_events = "all";
  if (options.publish_events != "all" && options.publish_events != "summary") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--publish-events: '", options.publish_events,
        "' is not a choice; expected all (every event) or summary (step marks, collectives, "
        "loss reports)"));
  }
  if (options.ack_wait_s < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats-ack-wait-s: ", options.ack_wait_s, " is not >= 1 second"));
  }
  if (options.max_age_s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats-max-age-s: ", options.max_age_s, " is negative; 0 keeps records"));
  }
  if (!options.upstream_job.empty()) {
    if (absl::Status s = protocol::ValidateJobId(options.upstream_job, "--upstream-job"); !s.ok()) {
      return s;
    }
  }
  if (options.duplicate_window_ms < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats-duplicate-window-ms: ", options.duplicate_window_ms, " is not >= 1"));
  }
  StreamLimits limits;
  limits.max_age = absl::Seconds(options.max_age_s);
  limits.duplicate_window = absl::Milliseconds(options.duplicate_window_ms);
  std::unique_ptr<TierRole> role(new TierRole(options));
  if (!options.publish.empty()) {
    NodePublisherOptions p;
    p.nats = options.nats;
    p.nats.url = options.publish;
    p.nats.name = absl::StrCat("trainscope-node ", options.node);
    p.node = options.node;
    p.data_dir = options.data_dir;
    p.buffer_bytes = options.publish_buffer_mb << 20;
    p.summary = options.publish_events == "summary";
    p.limits = limits;
    absl::StatusOr<std::unique_ptr<NodePublisher>> publisher = NodePublisher::Create(p);
    if (!publisher.ok()) return publisher.status();
    role->publisher_ = std::move(*publisher);
  }
  if (!options.upstream.empty()) {
    NatsConfig nats = options.nats;
    nats.url = options.upstream;
    if (absl::Status s = ValidateNatsConfig(nats, "--upstream"); !s.ok()) return s;
  }
  return role;
}

void TierRole::Start(collector::JobRegistry* registry, collector::BadInputCounters* counters) {
  StreamLimits limits;
  limits.max_age = absl::Seconds(options_.max_age_s);
  limits.duplicate_window = absl::Milliseconds(options_.duplicate_window_ms);
  if (publisher_ != nullptr) {
    CommandListenerOptions l;
    l.nats = options_.nats;
    l.nats.url = options_.publish;
    l.nats.name = absl::StrCat("trainscope-node-commands ", options_.node);
    l.node = options_.node;
    l.data_dir = options_.data_dir;
    l.limits = limits;
    listener_ = CommandListener::Start(l, registry);
  }
  if (!options_.upstream.empty()) {
    UpstreamConsumerOptions u;
    u.nats = options_.nats;
    u.nats.url = options_.upstream;
    u.nats.name = absl::StrCat("trainscope-job-level ", options_.node);
    u.name = options_.node;
    if (!options_.durable.empty()) u.durable = options_.durable;
    if (!options_.upstream_job.empty()) {
      u.filter = absl::StrCat("trainscope.rec.", SubjectToken(options_.upstream_job), ".>");
    }
    u.ack_wait = absl::Seconds(options_.ack_wait_s);
    u.limits = limits;
    u.status_file = options_.data_dir / "tier" / "upstream.status";
    std::error_code ec;
    std::filesystem::create_directories(options_.data_dir / "tier", ec);
    std::unique_ptr<UpstreamConsumer> consumer = UpstreamConsumer::Start(u, registry, counters);
    base::MutexLock lock(&consumer_mu_);
    consumer_ = std::move(consumer);
  }
}

void TierRole::StopIntake() {
  // The consumer lives as long as this role, so its pointer outlives the lock.
  if (UpstreamConsumer* c = consumer(); c != nullptr) c->Stop();
  if (listener_ != nullptr) listener_->Stop();
}

void TierRole::FillStatus(trainscope::v1::TierStatus* status) {
  if (options_.publish.empty() && options_.upstream.empty()) return;
  status->set_node(!options_.publish.empty());
  status->set_job_level(!options_.upstream.empty());
  status->set_publish_url(UrlWithoutCredentials(options_.publish));
  status->set_upstream_url(UrlWithoutCredentials(options_.upstream));
  if (publisher_ != nullptr) {
    const NodePublisher::Counters c = publisher_->counters();
    status->set_connected(c.connected);
    status->set_buffered(c.queued);
    status->set_published(c.published);
    status->set_caught_up(c.caught_up);
    status->set_rewinds(c.rewinds);
    status->set_outages(c.outages);
  }
  if (UpstreamConsumer* consumer = this->consumer(); consumer != nullptr) {
    const UpstreamConsumer::Counters c = consumer->counters();
    status->set_consumed(c.acked);
    status->set_duplicates(c.duplicates);
    status->set_lag_ns(c.last_latency_ns);
    status->set_received(c.received);
  }
}

void TierRole::StopPublishing() {
  if (publisher_ != nullptr) publisher_->Stop(absl::Seconds(5));
}

}  // namespace trainscope::tier
