// Serves the collector's live metrics on a Prometheus endpoint
// (`trainscope-collector --metrics-port N`, GET /metrics). It sits between
// the job pipelines and the live feed: a FeedSink that reads every update
// (job summaries, rank counters, closed steps, alerts) into gauges and
// counters, then hands the update on unchanged. Per job and rank: step time,
// data wait, collective wait and transfer, achieved FLOPS, peak memory,
// events received, agent drops, refused batches; per job: event rate,
// connected ranks, open alerts, alerts raised by rule; and the collector's
// own health (up, start time, feed updates seen). With a NATS tier
// (TierStatusProvider), trainscope_tier_* read at each scrape: the role, and
// a node's buffered/published/caught-up/rewinds/outages or the job level's
// consumed/duplicates/received/lag, with no labels (a bounded set).
//
// Usage:
//   absl::StatusOr<std::unique_ptr<PrometheusMetrics>> metrics =
//       PrometheusMetrics::Start("127.0.0.1:9464", &zmq_publisher);
//   pipeline_options.feed = metrics->get();  // instead of the publisher
//   (*metrics)->port();                      // the bound port (0 picks one)
//
// Threading: Publish and Wants are thread-safe (pipeline threads call them);
// the HTTP server scrapes on its own threads. Nothing here blocks for long:
// metric updates are atomic, the label maps take a short lock.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_PROMETHEUS_METRICS_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_PROMETHEUS_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/adapters/tier_status_provider.h"
#include "trainscope/collector/publish/feed_sink.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace trainscope::collector {

class PrometheusMetrics : public FeedSink {
 public:
  // Binds HOST:PORT (port 0: any free one); `next` receives every update;
  // `tier_status` null: no trainscope_tier_* metrics.
  static absl::StatusOr<std::unique_ptr<PrometheusMetrics>> Start(
      const std::string& address, FeedSink* next, TierStatusProvider tier_status = nullptr);
  ~PrometheusMetrics() override;

  void Publish(trainscope::v1::FeedUpdate update) override;
  bool Wants(absl::string_view topic) const override { return next_->Wants(topic); }

  int port() const { return port_; }

 private:
  struct Families;
  class TierCollectable;
  PrometheusMetrics(FeedSink* next, std::shared_ptr<prometheus::Registry> registry);
  void Record(const trainscope::v1::FeedUpdate& update);

  FeedSink* const next_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::shared_ptr<TierCollectable> tier_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_PROMETHEUS_METRICS_H_
