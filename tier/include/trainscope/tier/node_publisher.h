// The node collector's side of the tier (docs/scale.md): publishes each
// durable record of its ranks' streams to JetStream for the job-level
// collector, with acknowledgements, a bounded buffer while NATS is away, and
// a catch-up from the node's own log for whatever the buffer could not hold
// or a killed collector had not yet published.
//
// Usage (trainscope-collector --publish nats://HOST:4222):
//   NodePublisherOptions options{.nats = {.url = url}, .node = "host-a", .data_dir = dir};
//   ASSIGN_OR_RETURN(std::unique_ptr<NodePublisher> publisher, NodePublisher::Create(options));
//   server_options.record_sink = publisher.get();  // before any job pipeline opens
//   ... CollectorServer::Start(server_options) ...
//   publisher->Stop();                             // after the server stopped
//
// Each job's sink records are numbered in log order (0, 1, ...);
// <data-dir>/tier/published/<job> holds how many of them JetStream has
// acknowledged, contiguously. Create reads every job's log to count its
// records; a job whose count is ahead of its acknowledged one, or whose live
// record the buffer refused, is "catching up": its live records are only
// counted, and the publisher thread reads them back from the log (which holds
// them: records reach the sink only once durable) until it has caught up
// with the count, then goes back to live. Records go out in windows of
// asynchronous publishes with a Nats-Msg-Id (RecordMsgId); a window not fully
// acknowledged is sent again whole, and JetStream drops the copies.
//
// Counters (what is queued, published, resent, caught up, and whether NATS is
// reachable) are in counters() and, each second, <data-dir>/tier/publisher.status.
//
// Threading: OnDurable is thread-safe and never blocks (job pipeline
// threads); one publisher thread does all NATS and log I/O. Stop joins it.
#ifndef TRAINSCOPE_TIER_NODE_PUBLISHER_H_
#define TRAINSCOPE_TIER_NODE_PUBLISHER_H_

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
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/publish/record_sink.h"
#include "trainscope/tier/nats_client.h"
#include "trainscope/tier/publish_buffer.h"
#include "trainscope/v1/tier.pb.h"

namespace trainscope::tier {

struct NodePublisherOptions {
  NatsConfig nats;
  std::string node;  // --node-name: this collector in subjects and records
  std::filesystem::path data_dir;
  uint64_t buffer_bytes = 256ull << 20;  // --publish-buffer-mb
  bool summary = false;                  // --publish-events=summary: SummaryBatch
  StreamLimits limits;
  size_t window = 256;  // records per acknowledged window
  absl::Duration retry = absl::Seconds(1);
  std::function<void(absl::string_view)> notice;  // default: stderr
};

class NodePublisher : public collector::RecordSink {
 public:
  struct Counters {
    bool connected = false;
    uint64_t published = 0;       // records JetStream acknowledged (copies included)
    uint64_t resent_windows = 0;  // windows sent again after a failure
    uint64_t caught_up = 0;       // records read back from the log and published
    uint64_t buffer_refused = 0;  // live records past the buffer bound (left to the catch-up)
    uint64_t queued = 0;          // in the buffer now
    uint64_t queued_bytes = 0;
    uint64_t jobs_catching_up = 0;
    uint64_t outages = 0;  // times NATS could not be reached
    uint64_t rewinds = 0;  // jobs published again from kRewind before (see Rewind)
    std::string last_error;
  };

  // Reads the data dir's job logs (record counts, streams) and starts the
  // publisher thread, which connects in the background: NATS unreachable is
  // not an error here, it is said on stderr and retried.
  static absl::StatusOr<std::unique_ptr<NodePublisher>> Create(NodePublisherOptions options);
  ~NodePublisher() override;  // Stop()

  void OnDurable(absl::string_view job_id, const trainscope::v1::LogRecord& record) override;

  // Publishes what is buffered (up to `drain` long), then stops the thread.
  void Stop(absl::Duration drain = absl::Seconds(5));

  Counters counters() const;

 private:
  struct JobState {
    uint64_t next_index = 0;         // records handed over (live) or counted in the log
    uint64_t acked = 0;              // contiguous prefix JetStream acknowledged
    std::set<uint64_t> acked_ahead;  // acknowledged past a hole
    bool catching_up = false;
    std::map<std::pair<uint32_t, uint64_t>, trainscope::v1::Hello> hellos;  // (rank, instance)
    std::optional<std::string> token;  // the job's own token, once read
    // (when, acked before that window): the recent acknowledgements, for Rewind.
    std::deque<std::pair<absl::Time, uint64_t>> recent_acks;
  };

  explicit NodePublisher(NodePublisherOptions options);
  absl::Status ScanLogs();
  void Run();
  bool EnsureConnected();
  // Publishes `items` and waits for every ack; on success marks them acked.
  absl::Status PublishWindow(const std::vector<PublishBuffer::Item>& items);
  // Reads the job's log back past its acknowledged records; false when NATS failed.
  bool CatchUp(const std::string& job_id);
  void MarkAcked(const std::vector<PublishBuffer::Item>& items);
  // After a failure or a reconnect: JetStream may have lost what it
  // acknowledged last (a single server killed before its store flushed), so
  // every job publishes again from what was acknowledged kRewind before;
  // JetStream drops what it still has (Nats-Msg-Id), the job level the rest.
  void Rewind();
  static constexpr absl::Duration kRewind = absl::Seconds(5);
  void WriteStatus();
  void Notice(absl::string_view line) const;
  // Builds the record's item (nullopt for records the sink does not publish).
  std::optional<PublishBuffer::Item> MakeItem(const std::string& job_id, uint64_t index,
                                              const trainscope::v1::LogRecord& record,
                                              JobState& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string TokenOf(const std::string& job_id, JobState& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void OnPublishError(jsCtx* js, jsPubAckErr* err, void* closure);

  const NodePublisherOptions options_;
  PublishBuffer buffer_;

  mutable base::Mutex mu_;
  std::map<std::string, JobState, std::less<>> jobs_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  base::CondVar stop_requested_;  // signalled when stopping_ is set
  absl::Time drain_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool publish_failed_ ABSL_GUARDED_BY(mu_) = false;  // set by the async error handler

  // Publisher thread only.
  std::unique_ptr<NatsClient> client_;
  std::vector<PublishBuffer::Item> retry_;  // a window to send again
  bool in_outage_ = false;
  uint64_t reconnects_seen_ = 0;  // the connection's reconnect count at the last look
  std::thread thread_;
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_NODE_PUBLISHER_H_
