#include "trainscope/collector/pipeline/agent_stream_table.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/store/job_state_rule.h"

namespace trainscope::collector {

void AgentStreamTable::Recover(const JobLogState& state) {
  for (const auto& [key, progress] : state.streams) {
    if (progress.hello.world_size() != 0) world_size_ = progress.hello.world_size();
    v1::RankStatus& r = ranks_[key.rank];
    unpublished_ranks_.insert(key.rank);
    // Counters are cumulative over a rank's incarnations; identity is the latest one.
    const bool newer =
        r.agent_instance_id() == 0 || progress.hello.restart_count() >= r.restart_count();
    r.set_rank(key.rank);
    r.set_events_received(r.events_received() + progress.events);
    r.set_batches_received(r.batches_received() + progress.batches);
    r.set_bytes_received(r.bytes_received() + progress.bytes);
    r.set_batches_refused(r.batches_refused() + progress.batches_refused);
    events_total_ += progress.events;
    bytes_total_ += progress.bytes;
    if (!newer) continue;
    r.set_restart_count(progress.hello.restart_count());
    r.set_agent_instance_id(key.agent_instance_id);
    r.set_host(progress.hello.host());
    r.set_rack(progress.hello.rack());
    r.set_pid(progress.hello.pid());
    r.set_device(progress.hello.device());
    r.set_framework(progress.hello.framework());
    r.set_framework_version(progress.hello.framework_version());
    r.set_said_goodbye(progress.goodbye);
    r.set_exit_error(progress.exit_error);
    if (StreamEndedAbnormally(progress)) {
      vanished_ranks_.insert(key.rank);
    } else {
      vanished_ranks_.erase(key.rank);
    }
    r.set_last_sequence(progress.last_sequence);
    *r.mutable_agent_drops() = progress.drops;
    r.set_world_size(progress.hello.world_size());
  }
}

absl::Status AgentStreamTable::CheckWorldSize(const v1::Hello& hello) const {
  if (world_size_ == 0 || hello.world_size() == world_size_) return absl::OkStatus();
  return BadInput(absl::StatusCode::kFailedPrecondition, "hello.world_size",
                  absl::StrCat("job ", job_id_, ": hello.world_size ", hello.world_size(),
                               " does not match the job's world size ", world_size_,
                               " (every rank of a job must report the same)"));
}

absl::StatusOr<std::optional<AgentStreamTable::Replacement>> AgentStreamTable::FindReplaced(
    const v1::Hello& hello) const {
  const uint32_t rank = hello.rank();
  auto it = connection_by_rank_.find(rank);
  if (it == connection_by_rank_.end()) return std::nullopt;
  const Connection& old = connections_.at(it->second);
  const v1::RankStatus& current = ranks_.at(rank);
  if (old.key.agent_instance_id == hello.agent_instance_id()) {
    return Replacement{old.id, "the same agent reconnected"};
  }
  if (hello.restart_count() > current.restart_count()) {
    return Replacement{old.id, absl::StrCat("a new incarnation connected (restart_count ",
                                            hello.restart_count(), " > ",
                                            current.restart_count(), ")")};
  }
  return BadInput(absl::StatusCode::kAlreadyExists, "hello.rank",
                  absl::StrCat("job ", job_id_, ": rank ", rank, " is already connected (pid ",
                               old.pid, " on host '", old.host,
                               "'); a restarted worker must use a higher "
                               "restart_count (connected: ",
                               current.restart_count(), ", this hello: ", hello.restart_count(),
                               ")"));
}

AgentStreamTable::Connection& AgentStreamTable::Open(const v1::Hello& hello,
                                                     std::shared_ptr<AgentStream> stream,
                                                     std::string peer, uint64_t resume,
                                                     int64_t now_unix_ns) {
  const uint32_t rank = hello.rank();
  world_size_ = hello.world_size();
  const uint64_t id = next_connection_id_++;
  Connection& connection = connections_[id];
  connection.id = id;
  connection.key = StreamKey{rank, hello.agent_instance_id()};
  connection.stream = std::move(stream);
  connection.peer = std::move(peer);
  connection.pid = hello.pid();
  connection.host = hello.host();
  connection.recording = hello.recording();
  connection_by_rank_[rank] = id;

  v1::RankStatus& r = ranks_[rank];
  r.set_rank(rank);
  r.set_restart_count(hello.restart_count());
  r.set_agent_instance_id(hello.agent_instance_id());
  r.set_host(hello.host());
  r.set_rack(hello.rack());
  r.set_pid(hello.pid());
  r.set_device(hello.device());
  r.set_framework(hello.framework());
  r.set_framework_version(hello.framework_version());
  r.set_connected(true);
  r.set_said_goodbye(false);
  vanished_ranks_.erase(rank);
  r.set_last_sequence(resume);
  r.set_connected_unix_ns(now_unix_ns);
  r.set_last_seen_unix_ns(now_unix_ns);
  r.set_world_size(world_size_);
  MarkChanged(rank);
  return connection;
}

std::optional<AgentStreamTable::Closed> AgentStreamTable::Close(uint64_t connection_id,
                                                                bool goodbye,
                                                                const std::string& exit_error,
                                                                bool collector_stopping,
                                                                int64_t now_unix_ns) {
  auto it = connections_.find(connection_id);
  if (it == connections_.end()) return std::nullopt;
  Closed closed{it->second.key, IsCurrent(connection_id)};
  connections_.erase(it);
  if (!closed.current) return closed;
  const uint32_t rank = closed.key.rank;
  connection_by_rank_.erase(rank);
  v1::RankStatus& r = ranks_[rank];
  r.set_connected(false);
  if (goodbye) r.set_said_goodbye(true);
  r.set_exit_error(exit_error);
  // An abnormal end said is not a vanished rank, yet the job did not end
  // cleanly: the job's state counts it with the vanished.
  if ((goodbye && exit_error.empty()) || collector_stopping) {
    vanished_ranks_.erase(rank);
  } else {
    vanished_ranks_.insert(rank);
  }
  r.set_last_seen_unix_ns(now_unix_ns);
  MarkChanged(rank);
  return closed;
}

AgentStreamTable::Connection* AgentStreamTable::Find(uint64_t connection_id) {
  auto it = connections_.find(connection_id);
  return it == connections_.end() ? nullptr : &it->second;
}

bool AgentStreamTable::IsCurrent(uint64_t connection_id) const {
  auto it = connections_.find(connection_id);
  if (it == connections_.end()) return false;
  auto current = connection_by_rank_.find(it->second.key.rank);
  return current != connection_by_rank_.end() && current->second == connection_id;
}

std::vector<uint64_t> AgentStreamTable::ConnectionIds() const {
  std::vector<uint64_t> ids;
  ids.reserve(connections_.size());
  for (const auto& [id, connection] : connections_) ids.push_back(id);
  return ids;
}

uint32_t AgentStreamTable::AckedCount() const {
  uint32_t acked = 0;
  for (const auto& [id, connection] : connections_) acked += connection.hello_acked ? 1 : 0;
  return acked;
}

uint32_t AgentStreamTable::SendToAcked(const v1::Control& control) {
  uint32_t reached = 0;
  for (auto& [id, connection] : connections_) {
    if (!connection.hello_acked) continue;
    if (control.body_case() != v1::Control::BODY_NOT_SET) connection.stream->Send(control);
    ++reached;
  }
  return reached;
}

void AgentStreamTable::FinishAll(const absl::Status& status) {
  for (auto& [id, connection] : connections_) connection.stream->Finish(status);
}

void AgentStreamTable::OnBatch(uint32_t rank, const v1::EventBatch& batch, bool refused,
                               uint64_t bytes, int64_t logged_unix_ns) {
  OnBatch(rank, batch.sequence(), static_cast<uint64_t>(batch.kind_size()),
          batch.has_drops() ? &batch.drops() : nullptr, refused, bytes, logged_unix_ns);
}

void AgentStreamTable::OnBatch(uint32_t rank, uint64_t sequence, uint64_t events,
                               const v1::DropCounters* drops, bool refused, uint64_t bytes,
                               int64_t logged_unix_ns) {
  v1::RankStatus& r = ranks_[rank];
  if (refused) {
    r.set_batches_refused(r.batches_refused() + 1);
  } else {
    r.set_events_received(r.events_received() + events);
    r.set_batches_received(r.batches_received() + 1);
    r.set_bytes_received(r.bytes_received() + bytes);
    events_total_ += events;
    bytes_total_ += bytes;
    last_event_unix_ns_ = logged_unix_ns;
  }
  r.set_last_sequence(sequence);
  r.set_last_seen_unix_ns(logged_unix_ns);
  if (drops != nullptr) *r.mutable_agent_drops() = *drops;
  MarkChanged(rank);
}

void AgentStreamTable::OnStoreRefused(uint32_t rank, uint64_t events) {
  v1::RankStatus& r = ranks_[rank];
  r.set_store_refused_batches(r.store_refused_batches() + 1);
  r.set_store_refused_events(r.store_refused_events() + events);
  MarkChanged(rank);
}

void AgentStreamTable::SetDrops(uint32_t rank, const v1::DropCounters& drops) {
  *ranks_[rank].mutable_agent_drops() = drops;
  MarkChanged(rank);
}

void AgentStreamTable::SendProbes(int64_t now_unix_ns) {
  constexpr size_t kMaxProbesInFlight = 8;
  for (auto& [id, connection] : connections_) {
    if (!connection.hello_acked) continue;
    const uint64_t probe_id = next_probe_id_++;
    connection.probes_in_flight[probe_id] = now_unix_ns;
    while (connection.probes_in_flight.size() > kMaxProbesInFlight) {
      connection.probes_in_flight.erase(connection.probes_in_flight.begin());
    }
    v1::Control control;
    control.mutable_probe()->set_probe_id(probe_id);
    control.mutable_probe()->set_collector_send_unix_ns(now_unix_ns);
    connection.stream->Send(std::move(control));
  }
}

std::optional<v1::ProbeSample> AgentStreamTable::TakeProbeReply(uint64_t connection_id,
                                                                v1::ProbeReply reply,
                                                                int64_t receive_unix_ns) {
  Connection* connection = Find(connection_id);
  if (connection == nullptr) return std::nullopt;
  auto probe = connection->probes_in_flight.find(reply.probe_id());
  if (probe == connection->probes_in_flight.end()) return std::nullopt;
  v1::ProbeSample sample;
  sample.set_rank(connection->key.rank);
  sample.set_collector_send_unix_ns(probe->second);
  sample.set_collector_receive_unix_ns(receive_unix_ns);
  *sample.mutable_reply() = std::move(reply);
  connection->probes_in_flight.erase(probe);
  return sample;
}

std::vector<v1::RankStatus> AgentStreamTable::TakeChangedRanks() {
  std::vector<v1::RankStatus> changed;
  changed.reserve(changed_ranks_.size());
  for (uint32_t rank : changed_ranks_) changed.push_back(ranks_[rank]);
  changed_ranks_.clear();
  return changed;
}

std::vector<uint32_t> AgentStreamTable::TakeRanksToRepublish() {
  std::vector<uint32_t> changed(unpublished_ranks_.begin(), unpublished_ranks_.end());
  unpublished_ranks_.clear();
  return changed;
}

void AgentStreamTable::MarkChanged(uint32_t rank) {
  changed_ranks_.insert(rank);
  unpublished_ranks_.insert(rank);
}

v1::JobState AgentStreamTable::State(bool halted) const {
  JobStateFacts facts;
  facts.halted = halted;
  facts.ranks_seen = static_cast<uint32_t>(ranks_.size());
  facts.connected = AnyConnected() ? 1 : 0;
  for (const auto& [rank, r] : ranks_) facts.goodbyes += r.said_goodbye() ? 1 : 0;
  facts.vanished = static_cast<uint32_t>(vanished_ranks_.size());
  return DecideJobState(facts);
}

void AgentStreamTable::FillSummary(v1::JobSummary* summary) const {
  uint32_t connected = 0;
  for (const auto& [rank, r] : ranks_) connected += r.connected() ? 1 : 0;
  summary->set_world_size(world_size_);
  summary->set_ranks_connected(connected);
  summary->set_ranks_seen(static_cast<uint32_t>(ranks_.size()));
  summary->set_events_received(events_total_);
  summary->set_bytes_received(bytes_total_);
  summary->set_last_event_unix_ns(last_event_unix_ns_);
  summary->set_hellos_refused(hellos_refused_);
  summary->set_last_hello_refusal(last_hello_refusal_);
  summary->set_last_hello_refusal_from(last_hello_refusal_from_);
}

bool AgentStreamTable::AnyRecording() const {
  for (const auto& [id, connection] : connections_) {
    if (connection.recording) return true;
  }
  return false;
}

}  // namespace trainscope::collector
