#include "trainscope/cli/replay_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::cli {
namespace {

constexpr size_t kMaxJobIdLength = 128;
constexpr char kReplaySuffix[] = "-replay";

}  // namespace

ReplayPlanner::ReplayPlanner(Options options) : options_(std::move(options)) {}

std::string ReplayPlanner::DefaultReplayJobId(const std::string& original_job_id) {
  const size_t keep = kMaxJobIdLength - (sizeof(kReplaySuffix) - 1);
  return absl::StrCat(original_job_id.substr(0, keep), kReplaySuffix);
}

uint64_t ReplayPlanner::total_batches() const {
  uint64_t total = 0;
  for (const PlannedStream& stream : streams_) total += stream.batches;
  return total;
}

uint64_t ReplayPlanner::total_events() const {
  uint64_t total = 0;
  for (const PlannedStream& stream : streams_) total += stream.events;
  return total;
}

void ReplayPlanner::Close(size_t index, std::vector<ReplayAction>* actions) {
  PlannedStream& stream = streams_[index];
  stream.closed = true;
  ReplayAction action;
  action.kind = ReplayAction::kClose;
  action.stream = index;
  trainscope::v1::Goodbye* goodbye = action.message.mutable_goodbye();
  *goodbye->mutable_drops() = stream.last_drops;
  goodbye->set_events_recorded(stream.events);
  actions->push_back(std::move(action));
}

void ReplayPlanner::Consume(const trainscope::v1::LogRecord& record,
                            std::vector<ReplayAction>* actions) {
  switch (record.body_case()) {
    case trainscope::v1::LogRecord::kStreamOpened: {
      const trainscope::v1::Hello& stored = record.stream_opened().hello();
      const Key key{stored.rank(), stored.agent_instance_id()};
      if (open_.count(key) != 0) return;  // a reconnect: the replayed stream goes on
      PlannedStream stream;
      stream.rank = stored.rank();
      stream.original_instance_id = stored.agent_instance_id();
      stream.hello = stored;
      stream.hello.set_job_id(options_.as_job.empty() ? DefaultReplayJobId(stored.job_id())
                                                      : options_.as_job);
      stream.hello.set_agent_instance_id(options_.new_instance_id());
      // Protocol 1 (the token in the Hello): the replayer does not answer the
      // membership challenge of protocol 2 yet (docs/security.md); a
      // collector still admits protocol 1 with the job's secret.
      stream.hello.set_protocol_version(kMinProtocolVersion);
      stream.hello.set_min_protocol_version(kMinProtocolVersion);
      stream.hello.set_job_token(options_.job_token);
      // The replay sends events, so it says it records (a dormant original
      // would otherwise make the collector treat the batches as unexpected).
      stream.hello.set_recording(true);
      const size_t index = streams_.size();
      streams_.push_back(std::move(stream));
      open_[key] = index;
      ReplayAction action;
      action.kind = ReplayAction::kOpen;
      action.stream = index;
      *action.message.mutable_hello() = streams_[index].hello;
      actions->push_back(std::move(action));
      return;
    }
    case trainscope::v1::LogRecord::kBatch: {
      const trainscope::v1::StreamBatch& stored = record.batch();
      auto it = open_.find(Key{stored.rank(), stored.agent_instance_id()});
      if (it == open_.end()) {
        ++orphan_batches_;
        return;
      }
      PlannedStream& stream = streams_[it->second];
      if (stored.batch().has_drops()) stream.last_drops = stored.batch().drops();
      // A batch the collector refused is logged only to keep its sequence
      // consumed (no events): the replay leaves it out, as the collector did.
      if (!stored.refused_reason().empty() || stored.batch().kind_size() == 0) {
        ++stream.skipped_refused;
        return;
      }
      const uint64_t original_sequence = stored.batch().sequence();
      if (stream.batches > 0 && original_sequence <= stream.last_original_sequence) {
        ++stream.skipped_resends;
        return;
      }
      if (stream.batches == 0) stream.first_original_sequence = original_sequence;
      stream.last_original_sequence = original_sequence;
      ++stream.batches;
      stream.events += static_cast<uint64_t>(stored.batch().kind_size());

      ReplayAction action;
      action.kind = ReplayAction::kBatch;
      action.stream = it->second;
      trainscope::v1::EventBatch* batch = action.message.mutable_batch();
      *batch = stored.batch();
      batch->set_sequence(stream.batches);
      const trainscope::v1::Hello& hello = stream.hello;
      if (stored.batch().base_time_ns() != 0 && hello.clock_domains_size() > 0) {
        action.original_unix_ns =
            stored.batch().base_time_ns() + hello.clock_domains(0).realtime_minus_domain_ns();
      } else {
        action.original_unix_ns = record.logged_unix_ns();
      }
      actions->push_back(std::move(action));
      return;
    }
    case trainscope::v1::LogRecord::kStreamClosed: {
      const trainscope::v1::StreamClosed& closed = record.stream_closed();
      // Only a goodbye ends the replayed stream: after a plain disconnect the
      // same agent instance may reconnect and continue its sequence.
      if (!closed.goodbye()) return;
      auto it = open_.find(Key{closed.rank(), closed.agent_instance_id()});
      if (it == open_.end()) return;
      const size_t index = it->second;
      open_.erase(it);
      Close(index, actions);
      return;
    }
    default:
      return;  // probes and commands belong to the original run
  }
}

void ReplayPlanner::Finish(std::vector<ReplayAction>* actions) {
  // In stream order, so the output does not depend on map ordering of keys.
  std::vector<size_t> still_open;
  for (const auto& [key, index] : open_) still_open.push_back(index);
  std::sort(still_open.begin(), still_open.end());
  open_.clear();
  for (size_t index : still_open) Close(index, actions);
}

}  // namespace trainscope::cli
