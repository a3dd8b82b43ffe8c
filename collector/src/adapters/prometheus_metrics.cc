#include "trainscope/collector/adapters/prometheus_metrics.h"

#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "prometheus/client_metric.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace trainscope::collector {
namespace {

namespace v1 = trainscope::v1;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;

Family<Gauge>& GaugeFamily(prometheus::Registry& registry, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

// A host label: a rank whose Hello named no host counts as "unknown".
const std::string& HostLabel(const std::string& host) {
  static const std::string* const kUnknown = new std::string("unknown");
  return host.empty() ? *kUnknown : host;
}

// A step's pair traffic summed by (source host, destination host): the
// series stay hosts^2 however many ranks and groups a job has.
struct HostPairTotals {
  uint64_t bytes = 0;
  uint64_t messages = 0;
};
std::map<std::pair<std::string, std::string>, HostPairTotals> ByHostPair(
    const v1::StepReport& step) {
  std::map<std::pair<std::string, std::string>, HostPairTotals> out;
  for (const v1::PairTraffic& p : step.traffic()) {
    HostPairTotals& t = out[{HostLabel(p.src_host()), HostLabel(p.dst_host())}];
    t.bytes += p.bytes();
    t.messages += p.messages();
  }
  return out;
}

}  // namespace

// Family::Add is thread-safe and returns the same metric for the same labels.
struct PrometheusMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : job_events(GaugeFamily(r, "trainscope_job_events_received",
                               "Events of the job written to the durable log")),
        job_rate(GaugeFamily(r, "trainscope_job_events_per_second",
                             "The job's event rate over the last few seconds")),
        job_ranks(GaugeFamily(r, "trainscope_job_ranks_connected", "Ranks streaming now")),
        job_open_alerts(
            GaugeFamily(r, "trainscope_job_open_alerts", "Alerts raised and not cleared")),
        job_names_over_budget(
            GaugeFamily(r, "trainscope_job_names_over_budget",
                        "Operator names past the job's name budget (--max-job-names), read as "
                        "\"(name budget exceeded)\"")),
        rank_events(GaugeFamily(r, "trainscope_rank_events_received",
                                "Events of the rank written to the durable log")),
        rank_dropped(GaugeFamily(r, "trainscope_rank_agent_dropped_events",
                                 "Events the rank's agent dropped (ring or buffer full, "
                                 "shutdown), as it last reported")),
        rank_refused(GaugeFamily(r, "trainscope_rank_batches_refused",
                                 "Batches of the rank the collector refused")),
        rank_connected(GaugeFamily(r, "trainscope_rank_connected", "1 while the rank streams")),
        step(GaugeFamily(r, "trainscope_step", "The newest step closed on every live rank")),
        step_time(GaugeFamily(r, "trainscope_step_time_seconds", "The rank's last step time")),
        data_wait(GaugeFamily(r, "trainscope_data_wait_seconds",
                              "The rank's wait for data in its last step (step interval)")),
        wait(GaugeFamily(r, "trainscope_collective_wait_seconds",
                         "Time in collectives waiting for the last participant, last step")),
        transfer(GaugeFamily(r, "trainscope_collective_transfer_seconds",
                             "Time in collectives after every participant arrived, last step")),
        flops(GaugeFamily(r, "trainscope_achieved_flops", "FLOP/s the rank achieved, last step")),
        memory(GaugeFamily(r, "trainscope_peak_memory_bytes", "The rank's peak memory, last step")),
        traffic_bytes(prometheus::BuildCounter()
                          .Name("trainscope_traffic_bytes_total")
                          .Help("Bytes between devices (send/recv counted, collectives by the "
                                "backend's algorithm), summed by source and destination host")
                          .Register(r)),
        traffic_messages(prometheus::BuildCounter()
                             .Name("trainscope_traffic_messages_total")
                             .Help("Messages between devices, by source and destination host")
                             .Register(r)),
        alerts_raised(prometheus::BuildCounter()
                          .Name("trainscope_alerts_raised_total")
                          .Help("Alerts raised, by rule")
                          .Register(r)),
        feed_updates(prometheus::BuildCounter()
                         .Name("trainscope_collector_feed_updates_total")
                         .Help("Live-feed updates the collector published")
                         .Register(r)
                         .Add({})),
        up(GaugeFamily(r, "trainscope_collector_up", "1 while the collector serves").Add({})),
        started(GaugeFamily(r, "trainscope_collector_start_time_seconds",
                            "Unix time the collector started")
                    .Add({})) {}

  Family<Gauge>& job_events;
  Family<Gauge>& job_rate;
  Family<Gauge>& job_ranks;
  Family<Gauge>& job_open_alerts;
  Family<Gauge>& job_names_over_budget;
  Family<Gauge>& rank_events;
  Family<Gauge>& rank_dropped;
  Family<Gauge>& rank_refused;
  Family<Gauge>& rank_connected;
  Family<Gauge>& step;
  Family<Gauge>& step_time;
  Family<Gauge>& data_wait;
  Family<Gauge>& wait;
  Family<Gauge>& transfer;
  Family<Gauge>& flops;
  Family<Gauge>& memory;
  Family<Counter>& traffic_bytes;
  Family<Counter>& traffic_messages;
  Family<Counter>& alerts_raised;
  Counter& feed_updates;
  Gauge& up;
  Gauge& started;
};

// The tier's counters are read at each scrape (they live in tier/, which
// publishes nothing on the feed): one unlabelled series per family.
class PrometheusMetrics::TierCollectable : public prometheus::Collectable {
 public:
  explicit TierCollectable(TierStatusProvider provider) : provider_(std::move(provider)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    v1::TierStatus t;
    provider_(&t);
    std::vector<prometheus::MetricFamily> out;
    if (!t.node() && !t.job_level()) return out;
    auto add = [&out](const char* name, const char* help, prometheus::MetricType type,
                      double value) {
      prometheus::MetricFamily family;
      family.name = name;
      family.help = help;
      family.type = type;
      prometheus::ClientMetric metric;
      if (type == prometheus::MetricType::Counter) {
        metric.counter.value = value;
      } else {
        metric.gauge.value = value;
      }
      family.metric.push_back(std::move(metric));
      out.push_back(std::move(family));
    };
    using prometheus::MetricType;
    add("trainscope_tier_node", "1: this collector publishes to NATS (--publish)",
        MetricType::Gauge, t.node() ? 1 : 0);
    add("trainscope_tier_job_level", "1: this collector consumes the nodes' records (--upstream)",
        MetricType::Gauge, t.job_level() ? 1 : 0);
    if (t.node()) {
      add("trainscope_tier_connected", "1 while the publisher reaches NATS", MetricType::Gauge,
          t.connected() ? 1 : 0);
      add("trainscope_tier_buffered_records", "Records waiting in the bounded publish buffer",
          MetricType::Gauge, static_cast<double>(t.buffered()));
      add("trainscope_tier_published_records_total", "Records JetStream acknowledged",
          MetricType::Counter, static_cast<double>(t.published()));
      add("trainscope_tier_caught_up_records_total", "Records read back from the log and published",
          MetricType::Counter, static_cast<double>(t.caught_up()));
      add("trainscope_tier_rewinds_total",
          "Jobs published again after a failed window or a reconnect", MetricType::Counter,
          static_cast<double>(t.rewinds()));
      add("trainscope_tier_outages_total", "Times NATS could not be reached", MetricType::Counter,
          static_cast<double>(t.outages()));
    }
    if (t.job_level()) {
      add("trainscope_tier_consumed_records_total",
          "Records from the nodes made durable here and acknowledged", MetricType::Counter,
          static_cast<double>(t.consumed()));
      add("trainscope_tier_duplicates_dropped_total",
          "Records from the nodes dropped as already durable or held", MetricType::Counter,
          static_cast<double>(t.duplicates()));
      add("trainscope_tier_received_messages_total",
          "Messages fetched from JetStream, redeliveries included", MetricType::Counter,
          static_cast<double>(t.received()));
      add("trainscope_tier_lag_seconds", "Node log time to durable here, of the last batch",
          MetricType::Gauge, Seconds(t.lag_ns()));
    }
    return out;
  }

 private:
  const TierStatusProvider provider_;
};

namespace {
// The metrics endpoint's HTTP workers, and how long one waits for a request.
constexpr int kServerThreads = 4;
constexpr int kRequestTimeoutMs = 2000;
}  // namespace

absl::StatusOr<std::unique_ptr<PrometheusMetrics>> PrometheusMetrics::Start(
    const std::string& address, FeedSink* next, TierStatusProvider tier_status) {
  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<PrometheusMetrics> metrics(new PrometheusMetrics(next, registry));
  try {
    // Several workers and a short request timeout: a connection that sends
    // nothing (a port scan, a stuck scraper) holds one worker for at most
    // kRequestTimeoutMs instead of civetweb's default 30 s, and the other
    // workers answer scrapes meanwhile (one worker: one idle connection
    // blocked /metrics for 30 s).
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", absl::StrCat(kServerThreads),
        "request_timeout_ms", absl::StrCat(kRequestTimeoutMs), "enable_keep_alive", "no"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-port: cannot serve metrics on ", address, ": ", e.what()));
  }
  metrics->exposer_->RegisterCollectable(registry);
  if (tier_status) {
    metrics->tier_ = std::make_shared<TierCollectable>(std::move(tier_status));
    metrics->exposer_->RegisterCollectable(metrics->tier_);
  }
  const std::vector<int> ports = metrics->exposer_->GetListeningPorts();
  metrics->port_ = ports.empty() ? 0 : ports.front();
  return metrics;
}

PrometheusMetrics::PrometheusMetrics(FeedSink* next, std::shared_ptr<prometheus::Registry> registry)
    : next_(next), registry_(std::move(registry)), families_(new Families(*registry_)) {
  families_->up.Set(1);
  families_->started.Set(static_cast<double>(absl::ToUnixSeconds(absl::Now())));
}

PrometheusMetrics::~PrometheusMetrics() = default;

void PrometheusMetrics::Publish(v1::FeedUpdate update) {
  Record(update);
  next_->Publish(std::move(update));
}

void PrometheusMetrics::Record(const v1::FeedUpdate& update) {
  Families& f = *families_;
  f.feed_updates.Increment();
  const std::string& job = update.job_id();
  switch (update.body_case()) {
    case v1::FeedUpdate::kJob: {
      const v1::JobSummary& s = update.job();
      f.job_events.Add({{"job", job}}).Set(static_cast<double>(s.events_received()));
      f.job_rate.Add({{"job", job}}).Set(s.events_per_second());
      f.job_ranks.Add({{"job", job}}).Set(s.ranks_connected());
      f.job_open_alerts.Add({{"job", job}}).Set(s.open_alerts());
      f.job_names_over_budget.Add({{"job", job}}).Set(static_cast<double>(s.names_over_budget()));
      break;
    }
    case v1::FeedUpdate::kRank: {
      const v1::RankStatus& r = update.rank();
      const std::map<std::string, std::string> labels{{"job", job},
                                                      {"rank", absl::StrCat(r.rank())}};
      const v1::DropCounters& d = r.agent_drops();
      f.rank_events.Add(labels).Set(static_cast<double>(r.events_received()));
      f.rank_dropped.Add(labels).Set(
          static_cast<double>(d.ring_full() + d.buffer_full() + d.shutdown()));
      f.rank_refused.Add(labels).Set(static_cast<double>(r.batches_refused()));
      f.rank_connected.Add(labels).Set(r.connected() ? 1 : 0);
      break;
    }
    case v1::FeedUpdate::kStep: {
      const v1::StepReport& step = update.step();
      f.step.Add({{"job", job}}).Set(static_cast<double>(step.step()));
      for (const v1::DeviceStep& d : step.devices()) {
        if (!d.complete()) continue;
        const std::map<std::string, std::string> labels{{"job", job},
                                                        {"rank", absl::StrCat(d.rank())}};
        f.step_time.Add(labels).Set(Seconds(d.step_time_ns()));
        f.data_wait.Add(labels).Set(Seconds(d.data_wait_ns()));
        f.wait.Add(labels).Set(Seconds(d.wait_ns()));
        f.transfer.Add(labels).Set(Seconds(d.transfer_ns()));
        f.flops.Add(labels).Set(d.flops_per_second());
        f.memory.Add(labels).Set(static_cast<double>(d.peak_memory_bytes()));
      }
      for (const auto& [hosts, t] : ByHostPair(step)) {
        const std::map<std::string, std::string> labels{
            {"job", job}, {"src_host", hosts.first}, {"dst_host", hosts.second}};
        f.traffic_bytes.Add(labels).Increment(static_cast<double>(t.bytes));
        f.traffic_messages.Add(labels).Increment(static_cast<double>(t.messages));
      }
      break;
    }
    case v1::FeedUpdate::kAlert:
      if (update.alert().state() == v1::ALERT_STATE_RAISED) {
        f.alerts_raised.Add({{"job", job}, {"rule", update.alert().rule()}}).Increment();
      }
      break;
    default:
      break;
  }
}

}  // namespace trainscope::collector
