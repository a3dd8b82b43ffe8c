// The table of a job's agent streams and of its ranks as they were last
// seen: who is connected on which stream, the handshake's rules (one world
// size, one live stream per rank, a reconnect or a newer incarnation
// replacing the old one), the rank counters, clock probes in flight, and
// the job state that follows from goodbyes and vanished ranks.
//
// Usage (on the pipeline thread):
//   table.Recover(log.state());
//   RETURN_IF_ERROR(table.CheckWorldSize(hello));
//   auto replaced = table.FindReplaced(hello);   // ALREADY_EXISTS: a duplicate rank
//   if (*replaced) { close (*replaced)->connection_id; }
//   Connection& c = table.Open(hello, stream, peer, resume, now);
//   table.OnBatch(rank, ...); table.SendProbes(now); table.TakeProbeReply(...);
//   table.Close(id, goodbye, exit_error, collector_stopping, now);
//   for (v1::RankStatus& r : table.TakeChangedRanks()) publish r;
//
// Streams are only written to by Send calls made through the table, and
// control messages go only to streams that got their HelloAck.
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_AGENT_STREAM_TABLE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_AGENT_STREAM_TABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainscope/collector/ingest/agent_stream.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/log.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

class AgentStreamTable {
 public:
  struct Connection {
    uint64_t id = 0;
    StreamKey key;
    std::shared_ptr<AgentStream> stream;
    std::string peer;
    uint32_t pid = 0;
    std::string host;
    bool hello_acked = false;  // control messages go only to streams that got their HelloAck
    bool recording = false;    // as the agent last reported
    std::map<uint64_t, int64_t> probes_in_flight;  // probe id -> send time
  };
  // The live stream a hello replaces, and why (for the log and the old stream).
  struct Replacement {
    uint64_t connection_id = 0;
    std::string why;
  };
  // What Close ended.
  struct Closed {
    StreamKey key;
    bool current = false;  // it was its rank's live stream (not one replaced before)
  };

  explicit AgentStreamTable(std::string job_id) : job_id_(std::move(job_id)) {}

  // Rebuilds the ranks (identity of the latest incarnation, counters summed
  // over incarnations) and the world size from a recovered log.
  void Recover(const JobLogState& state);

  // FAILED_PRECONDITION naming hello.world_size when it differs from the job's.
  absl::Status CheckWorldSize(const trainscope::v1::Hello& hello) const;
  // The rank's live stream this hello replaces (the same agent reconnected,
  // or a higher restart_count); none when the rank has no live stream;
  // ALREADY_EXISTS naming hello.rank for a second live stream of one rank.
  absl::StatusOr<std::optional<Replacement>> FindReplaced(
      const trainscope::v1::Hello& hello) const;
  // Registers the stream as its rank's live one; `resume`: the last durable
  // batch of this agent instance.
  Connection& Open(const trainscope::v1::Hello& hello, std::shared_ptr<AgentStream> stream,
                   std::string peer, uint64_t resume, int64_t now_unix_ns);
  // Ends a stream (nullopt when unknown). An abnormal end said (a goodbye
  // with an error) counts with the vanished for the job's state; a stream
  // cut by a stopping collector does not (its rank may come back).
  std::optional<Closed> Close(uint64_t connection_id, bool goodbye, const std::string& exit_error,
                              bool collector_stopping, int64_t now_unix_ns);

  Connection* Find(uint64_t connection_id);
  bool IsCurrent(uint64_t connection_id) const;
  bool AnyConnected() const { return !connection_by_rank_.empty(); }
  bool HasStreams() const { return !connections_.empty(); }
  std::vector<uint64_t> ConnectionIds() const;
  uint32_t AckedCount() const;
  // Sends `control` to every stream that got its HelloAck (nothing is sent
  // for an empty one); returns how many such streams there are.
  uint32_t SendToAcked(const trainscope::v1::Control& control);
  void FinishAll(const absl::Status& status);

  // A batch logged for `rank`: its counters (refused ones count apart).
  void OnBatch(uint32_t rank, const trainscope::v1::EventBatch& batch, bool refused,
               uint64_t bytes, int64_t logged_unix_ns);
  // The same from the batch's figures (`drops` may be null: none reported).
  void OnBatch(uint32_t rank, uint64_t sequence, uint64_t events,
               const trainscope::v1::DropCounters* drops, bool refused, uint64_t bytes,
               int64_t logged_unix_ns);
  void SetDrops(uint32_t rank, const trainscope::v1::DropCounters& drops);
  // A batch for `rank` that the log could not store (disk full, failing):
  // counted apart, never as received.
  void OnStoreRefused(uint32_t rank, uint64_t events);

  // Sends a clock probe to every acknowledged stream; unanswered probes are
  // forgotten after a few.
  void SendProbes(int64_t now_unix_ns);
  // The sample for a reply to one of this table's probes; nullopt for an
  // unknown stream, or an unknown or expired probe.
  std::optional<trainscope::v1::ProbeSample> TakeProbeReply(uint64_t connection_id,
                                                            trainscope::v1::ProbeReply reply,
                                                            int64_t receive_unix_ns);

  const std::map<uint32_t, trainscope::v1::RankStatus>& ranks() const { return ranks_; }
  // Ranks changed since the last call, in rank order.
  std::vector<trainscope::v1::RankStatus> TakeChangedRanks();
  bool HasChangedRanks() const { return !changed_ranks_.empty(); }
  // Ranks changed since the last call (every recovered rank after Recover),
  // in rank order: the rows the job's published status renews
  // (JobStatusBoard), apart from the feed's TakeChangedRanks.
  std::vector<uint32_t> TakeRanksToRepublish();

  uint32_t world_size() const { return world_size_; }  // 0 until the first hello
  // The job's state from its ranks (halted wins): running while a rank is
  // connected, finished once every rank said goodbye, lost when none is
  // connected and one ended without goodbye, idle otherwise.
  trainscope::v1::JobState State(bool halted) const;
  // Fills the summary's rank and traffic fields.
  void FillSummary(trainscope::v1::JobSummary* summary) const;
  bool AnyRecording() const;  // as the connected agents report
  uint64_t events_received() const { return events_total_; }  // over every rank, durable
  // `count` Hellos for this job were refused, the last for `why`, coming
  // `from` (HelloOrigin); FillSummary reports them.
  void CountRefusedHello(std::string why, std::string from, uint64_t count = 1) {
    hellos_refused_ += count;
    last_hello_refusal_ = std::move(why);
    last_hello_refusal_from_ = std::move(from);
  }

 private:
  const std::string job_id_;
  uint32_t world_size_ = 0;
  uint64_t next_connection_id_ = 1;
  uint64_t next_probe_id_ = 1;
  std::map<uint64_t, Connection> connections_;
  std::map<uint32_t, uint64_t> connection_by_rank_;
  std::map<uint32_t, trainscope::v1::RankStatus> ranks_;
  void MarkChanged(uint32_t rank);  // for the feed and the published status

  std::set<uint32_t> changed_ranks_;
  std::set<uint32_t> unpublished_ranks_;
  // Ranks whose latest stream ended without goodbye (recovered from the log
  // too): the job is lost once no rank is connected.
  std::set<uint32_t> vanished_ranks_;
  uint64_t events_total_ = 0;
  uint64_t hellos_refused_ = 0;
  std::string last_hello_refusal_;
  std::string last_hello_refusal_from_;
  uint64_t bytes_total_ = 0;
  int64_t last_event_unix_ns_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_AGENT_STREAM_TABLE_H_
