// Turns the records of a stored job log into what `trainscope replay` sends:
// one agent stream per stored stream (rank, agent_instance_id), each opened
// with the stored Hello (job renamed, fresh agent_instance_id, current
// protocol version), then its batches renumbered 1, 2, 3, ..., then Goodbye.
// Pure: no I/O, so the plan is tested on a real log without a network.
//
// Usage:
//   ReplayPlanner planner({.as_job = "", .new_instance_id = RandomId});
//   std::vector<ReplayAction> actions;
//   reader.ForEach([&](const v1::LogRecord& r) { planner.Consume(r, &actions); send(actions);
//   ...}); planner.Finish(&actions);   // Goodbye for every stream still open
//
// Rules: a stored stream that disconnected without goodbye and reconnected
// (same rank and instance id) stays one replayed stream; a batch whose stored
// sequence is not above the stream's previous one (a resend) is skipped; a
// batch of a stream that was never opened is counted as an orphan and skipped;
// a batch the original collector refused (logged with refused_reason and no
// events, to keep its sequence consumed) is skipped.
//
// Threading: one thread.
#ifndef TRAINSCOPE_CLI_REPLAY_PLANNER_H_
#define TRAINSCOPE_CLI_REPLAY_PLANNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::cli {

struct ReplayAction {
  enum Kind { kOpen, kBatch, kClose };
  Kind kind = kOpen;
  size_t stream = 0;                     // index into ReplayPlanner::streams()
  trainscope::v1::AgentMessage message;  // hello, batch (renumbered) or goodbye
  int64_t original_unix_ns = 0;          // kBatch: when it was recorded (wall clock), for pacing
};

struct PlannedStream {
  uint32_t rank = 0;
  uint64_t original_instance_id = 0;
  trainscope::v1::Hello hello;  // as it will be sent
  uint64_t batches = 0;         // renumbered 1..batches
  uint64_t events = 0;
  uint64_t skipped_resends = 0;
  uint64_t skipped_refused = 0;  // refused by the original collector, or empty
  uint64_t first_original_sequence = 0;
  uint64_t last_original_sequence = 0;
  bool closed = false;
  trainscope::v1::DropCounters last_drops;
};

class ReplayPlanner {
 public:
  struct Options {
    std::string as_job;  // empty: "<original job>-replay"
    std::function<uint64_t()> new_instance_id;
    std::string job_token;  // sent in every Hello; empty: the collector makes one
  };

  explicit ReplayPlanner(Options options);

  // Appends the actions one stored record causes (none for probes, commands).
  void Consume(const trainscope::v1::LogRecord& record, std::vector<ReplayAction>* actions);
  // Closes every stream still open (a Goodbye each).
  void Finish(std::vector<ReplayAction>* actions);

  const std::vector<PlannedStream>& streams() const { return streams_; }
  uint64_t orphan_batches() const { return orphan_batches_; }
  uint64_t total_batches() const;
  uint64_t total_events() const;

  // "<job>-replay", shortened so the result stays within the 128-character limit.
  static std::string DefaultReplayJobId(const std::string& original_job_id);

 private:
  using Key = std::pair<uint32_t, uint64_t>;  // rank, original agent_instance_id

  void Close(size_t index, std::vector<ReplayAction>* actions);

  Options options_;
  std::vector<PlannedStream> streams_;
  std::map<Key, size_t> open_;  // streams that may still get batches
  uint64_t orphan_batches_ = 0;
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_REPLAY_PLANNER_H_
