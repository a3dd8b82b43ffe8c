// The job-level collector's side of the tier (docs/scale.md): consumes the
// node collectors' records from JetStream with a durable consumer and replays
// each rank stream into this collector's job pipelines through an ordinary
// AgentSession (TierAgentStream), so that the job-wide view — clocks aligned
// across hosts, job-wide steps, the cross-host rules, the CLI, the viewer and
// halt — is the same as a single collector's over every rank. Commands the
// pipelines send to those ranks go back to the nodes as TierCommands.
//
// Usage (trainscope-collector --upstream nats://HOST:4222):
//   auto consumer = UpstreamConsumer::Start(options, &server->registry(), &server->counters());
//   ...
//   consumer->Stop();   // before the server shuts down
//
// Delivery: a message is acknowledged to JetStream only once what it carries
// is durable here (the Ack the pipeline gives the rank's stream; the HelloAck
// for an open), so a crash replays what was not; the consumer is durable, so
// a restart resumes from there. Duplicates (redeliveries, a node's resends)
// are dropped per rank stream by batch sequence: the pipeline's HelloAck says
// how far its log holds the stream, and StreamResequencer puts batches back
// in order. A stream the pipeline refuses (a wrong job token) has its
// messages terminated, and says why on stderr.
//
// Threading: two threads of its own — one fetches from NATS, one delivers to
// the sessions and serves their acks and commands; public methods are
// thread-safe. `registry` and `counters` must outlive it.
#ifndef TRAINSCOPE_TIER_UPSTREAM_CONSUMER_H_
#define TRAINSCOPE_TIER_UPSTREAM_CONSUMER_H_

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/bad_input_counters.h"
#include "trainscope/collector/ingest/ingest_budget.h"
#include "trainscope/collector/pipeline/agent_session.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/tier/jetstream_puller.h"
#include "trainscope/tier/nats_client.h"
#include "trainscope/tier/recent_ids.h"
#include "trainscope/tier/stream_resequencer.h"
#include "trainscope/tier/tier_agent_stream.h"
#include "trainscope/tier/tier_subjects.h"
#include "trainscope/v1/tier.pb.h"

namespace trainscope::tier {

struct UpstreamConsumerOptions {
  NatsConfig nats;
  std::string name = "job-level";                // --node-name: in TierCommand.issued_by
  std::string durable = "trainscope-job-level";  // --nats-durable
  std::string filter = kAllRecords;              // or trainscope.rec.<job>.> for one job
  absl::Duration ack_wait = absl::Seconds(10);
  int64_t max_ack_pending = 4096;  // messages held unacknowledged, at most
  StreamLimits limits;
  uint64_t max_queued_bytes = 256ull << 20;  // batches on their way to the log
  // Counters() each second as "key value" lines (empty: none); the tests and
  // operators read <data-dir>/tier/upstream.status.
  std::filesystem::path status_file;
  std::function<void(absl::string_view)> notice;  // default: stderr
};

class UpstreamConsumer : public TierStreamEvents {
 public:
  struct Counters {
    bool connected = false;
    uint64_t received = 0;    // messages fetched (redeliveries included)
    uint64_t duplicates = 0;  // dropped: already durable here, or already held
    uint64_t acked = 0;       // acknowledged once durable
    uint64_t malformed = 0;   // not a TierRecord: terminated
    uint64_t refused = 0;     // terminated: the pipeline refused the stream
    uint64_t streams_opened = 0;
    uint64_t commands_sent = 0;
    int64_t last_latency_ns = 0;  // node log time -> durable here, of the last batch
  };

  static std::unique_ptr<UpstreamConsumer> Start(UpstreamConsumerOptions options,
                                                 collector::JobRegistry* registry,
                                                 collector::BadInputCounters* counters);
  ~UpstreamConsumer() override;  // Stop()
  // Stops fetching, ends the replayed streams (unacknowledged messages come
  // again to the next consumer) and joins both threads.
  void Stop();

  Counters counters() const;

  // TierStreamEvents (from the sessions, any thread).
  void OnControl(uint64_t stream_id, trainscope::v1::Control control) override;
  void OnReadRequested(uint64_t stream_id) override;
  void OnFinish(uint64_t stream_id, absl::Status status) override;

 private:
  struct Pending {
    natsMsg* msg = nullptr;  // owned; acked (or not) and destroyed by the delivery thread
    std::shared_ptr<const trainscope::v1::TierRecord> record;
  };
  struct Stream {
    uint64_t id = 0;
    StreamKey key;
    std::string node;
    std::shared_ptr<TierAgentStream> transport;
    std::shared_ptr<collector::AgentSession> session;
    trainscope::v1::Hello hello;
    bool hello_sent = false;
    bool attached = false;  // HelloAck came
    bool read_requested = false;
    bool finished = false;  // the session finished the stream
    absl::Status finish_status;
    StreamResequencer<Pending> batches;
    std::map<uint64_t, Pending> in_flight;  // delivered, not yet durable, by sequence
    std::vector<Pending> opens;             // acked at the HelloAck
    std::optional<Pending> close;           // delivered once the batches before it are
  };
  struct Event {
    enum Kind { kControl, kRead, kFinish } kind;
    uint64_t stream_id = 0;
    trainscope::v1::Control control;
    absl::Status status;
  };

  UpstreamConsumer(UpstreamConsumerOptions options, collector::JobRegistry* registry,
                   collector::BadInputCounters* counters);
  void FetchLoop();
  void DeliverLoop();
  // Fetch thread: routes one message (takes ownership).
  void Route(natsMsg* msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Stream& OpenStream(const trainscope::v1::TierRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Delivery thread.
  void HandleEvent(Event& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleCommand(const Stream& stream, const trainscope::v1::Control& control)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishCommands();
  void Ack(Pending& pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Drop(Pending& pending, bool terminate) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notice(absl::string_view line) const;
  // Where acks go: the connection, once made (null before: nothing to ack).
  natsConnection* Connection() const {
    NatsClient* client = connected_client_.load();
    return client != nullptr ? client->connection() : nullptr;
  }
  void WriteStatus() const;

  const UpstreamConsumerOptions options_;
  collector::JobRegistry* const registry_;
  collector::BadInputCounters* const counters_in_;
  collector::IngestBudget budget_;

  mutable base::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Stream> streams_ ABSL_GUARDED_BY(mu_);
  std::map<StreamKey, uint64_t> by_key_ ABSL_GUARDED_BY(mu_);
  // Streams that ended (goodbye, or the node said it vanished): the last
  // sequence, so that a late copy does not reopen them.
  std::map<StreamKey, uint64_t> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  std::vector<trainscope::v1::TierCommand> outbox_ ABSL_GUARDED_BY(mu_);
  // Bounded (issue 22 gap): a long-lived job level sees a new id per job,
  // kind and second; dedup only needs to span one command's arrival.
  RecentIds commands_seen_ ABSL_GUARDED_BY(mu_){absl::Minutes(10), 100000};
  size_t held_ ABSL_GUARDED_BY(mu_) = 0;  // messages in memory
  // Sessions opened by Route, started by the fetch thread outside the lock.
  std::vector<std::shared_ptr<collector::AgentSession>> to_start_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
  // The fetch thread waits on fetch_wake_ (held_ dropped, or stopping_), the
  // delivery thread on deliver_wake_ (events_ or outbox_ grew, or stopping_).
  base::CondVar fetch_wake_;
  base::CondVar deliver_wake_;

  // Owned by the fetch thread; published here once connected (never replaced:
  // the library reconnects by itself) for the delivery thread's commands.
  std::unique_ptr<NatsClient> client_;
  std::atomic<NatsClient*> connected_client_{nullptr};
  std::thread fetch_thread_;
  std::thread deliver_thread_;
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_UPSTREAM_CONSUMER_H_
