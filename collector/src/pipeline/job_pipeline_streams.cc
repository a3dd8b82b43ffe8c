// JobPipeline: the ranks' streams (attach with its handshake, batches into
// the log, probe replies, detach and loss, ending every stream) (see
// job_pipeline.h). Runs on the pipeline thread like the rest.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline_clock.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/ingest/hello_validator.h"
#include "trainscope/collector/pipeline/job_pipeline.h"

namespace trainscope::collector {

// ---------------------------------------------------------------- attach

absl::Status JobPipeline::Attach(AttachRequest request,
                                 std::function<void(absl::StatusOr<AttachResult>)> done) {
  Task task = [this, request = std::move(request), done = std::move(done)](bool) mutable {
    DoAttach(request, done);
  };
  return TryPost(task) ? absl::OkStatus() : Stopped();
}

void JobPipeline::DoAttach(AttachRequest& request,
                           std::function<void(absl::StatusOr<AttachResult>)>& done) {
  const v1::Hello& hello = request.hello;
  const uint32_t rank = hello.rank();
  if (ending_) return done(*ending_);
  if (world_size_ != 0 && hello.world_size() != world_size_) {
    return done(BadInput(absl::StatusCode::kFailedPrecondition, "hello.world_size",
                         absl::StrCat("job ", job_id_, ": hello.world_size ", hello.world_size(),
                                      " does not match the job's world size ", world_size_,
                                      " (every rank of a job must report the same)")));
  }

  // The token: the first rank fixes it (or the collector makes one up).
  const std::string& presented = hello.job_token();
  std::string generated_for_this_rank;
  if (token_.value.empty()) {
    JobToken token{presented.empty() ? GenerateJobToken() : presented, presented.empty()};
    if (absl::Status s = WriteJobToken(job_dir_, token); !s.ok()) {
      return done(absl::UnavailableError(
          absl::StrCat("job ", job_id_, ": cannot store the job token: ", s.message())));
    }
    token_ = std::move(token);
    if (token_.generated) {
      generated_for_this_rank = token_.value;
      Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                          " attached without a token; generated one in ",
                          (job_dir_ / "token").string(), " (mode 0600), also sent to rank ", rank));
    }
  } else if (presented.empty()) {
    if (!token_.generated) {
      return done(
          BadInput(absl::StatusCode::kPermissionDenied, "hello.job_token",
                   absl::StrCat("job ", job_id_,
                                ": missing job token (hello.job_token); the job set one "
                                "when its first rank attached and every rank must present it")));
    }
  } else if (!TokensEqual(presented, token_.value)) {
    return done(BadInput(absl::StatusCode::kPermissionDenied, "hello.job_token",
                         absl::StrCat("job ", job_id_,
                                      ": wrong job token (hello.job_token does not "
                                      "match the token the job attached with)")));
  }

  // One live stream per rank: a reconnect or a newer incarnation replaces it.
  if (auto it = connection_by_rank_.find(rank); it != connection_by_rank_.end()) {
    Connection& old = connections_.at(it->second);
    const v1::RankStatus& current = ranks_[rank];
    std::string why;
    if (old.key.agent_instance_id == hello.agent_instance_id()) {
      why = "the same agent reconnected";
    } else if (hello.restart_count() > current.restart_count()) {
      why = absl::StrCat("a new incarnation connected (restart_count ", hello.restart_count(),
                         " > ", current.restart_count(), ")");
    } else {
      return done(BadInput(
          absl::StatusCode::kAlreadyExists, "hello.rank",
          absl::StrCat("job ", job_id_, ": rank ", rank, " is already connected (pid ", old.pid,
                       " on host '", old.host,
                       "'); a restarted worker must use a higher "
                       "restart_count (connected: ",
                       current.restart_count(), ", this hello: ", hello.restart_count(), ")")));
    }
    old.stream->Finish(absl::AbortedError(
        absl::StrCat("job ", job_id_, ": rank ", rank, ": this stream was replaced: ", why)));
    CloseConnection(old.id, false, absl::StrCat("replaced: ", why));
  }

  const bool first_rank = world_size_ == 0;
  world_size_ = hello.world_size();
  const uint64_t id = next_connection_id_++;
  Connection& connection = connections_[id];
  connection.id = id;
  connection.key = StreamKey{rank, hello.agent_instance_id()};
  connection.stream = std::move(request.stream);
  connection.peer = std::move(request.peer);
  connection.pid = hello.pid();
  connection.host = hello.host();
  connection.recording = hello.recording();
  connection_by_rank_[rank] = id;

  v1::LogRecord record;
  v1::Hello* logged = record.mutable_stream_opened()->mutable_hello();
  *logged = hello;
  logged->clear_job_token();  // the log is not a place for secrets
  const absl::Status appended = AppendRecord(record);
  if (appended.ok()) Analyse(record);

  uint64_t resume = 0;
  if (auto it = log_->state().streams.find(connection.key); it != log_->state().streams.end()) {
    resume = it->second.last_sequence;
  }
  const int64_t now = NowUnixNs();
  v1::RankStatus& r = ranks_[rank];
  r.set_rank(rank);
  r.set_restart_count(hello.restart_count());
  r.set_agent_instance_id(hello.agent_instance_id());
  r.set_host(hello.host());
  r.set_pid(hello.pid());
  r.set_device(hello.device());
  r.set_framework(hello.framework());
  r.set_framework_version(hello.framework_version());
  r.set_connected(true);
  r.set_said_goodbye(false);
  vanished_ranks_.erase(rank);
  r.set_last_sequence(resume);
  r.set_connected_unix_ns(now);
  r.set_last_seen_unix_ns(now);
  r.set_world_size(world_size_);
  dirty_ranks_[rank] = true;
  summary_changed_ = true;
  if (first_rank) IndexJob();
  IndexStream(connection.key);
  OnRankBack(rank);
  if (hello.halt_policy().enabled() && !halt_policy_from_job_) {
    // The job asked for its own policy (`trainscope run --halt-when ...`).
    JobCommand command;
    command.kind = JobCommand::Kind::kSetHaltPolicy;
    command.halt_policy = hello.halt_policy();
    command.requested_by = absl::StrCat("rank ", rank, "'s hello");
    std::function<void(absl::StatusOr<v1::CommandReply>)> policy_done =
        [this](absl::StatusOr<v1::CommandReply> reply) {
          if (!reply.ok()) {
            Notice(absl::StrCat("trainscope-collector: job ", job_id_,
                                ": the job's halt policy was refused: ", reply.status().message()));
          }
        };
    ExecuteCommand(command, policy_done);
  }

  after_sync_.push_back([this, id, resume, appended, generated = std::move(generated_for_this_rank),
                         recording = hello.recording(),
                         done = std::move(done)](const absl::Status& sync_status) mutable {
    absl::Status status = appended.ok() ? sync_status : appended;
    auto it = connections_.find(id);
    if (it == connections_.end()) {
      return done(absl::AbortedError(
          absl::StrCat("job ", job_id_, ": the stream was replaced before it was acknowledged")));
    }
    if (!status.ok()) {
      CloseConnection(id, false, std::string(status.message()));
      return done(status);
    }
    it->second.hello_acked = true;
    v1::Control control;
    v1::HelloAck* ack = control.mutable_hello_ack();
    ack->set_resume_after_sequence(resume);
    ack->set_job_token(generated);
    ack->set_recording(recording_.value_or(recording));
    ack->set_sampling_period(sampling_period_);
    ack->set_max_message_bytes(options_.max_message_bytes);
    if (loss_contribution_.has_value()) ack->set_loss_contribution(*loss_contribution_);
    it->second.stream->Send(std::move(control));
    if (halt_.has_value()) {
      // A job that was halted stays halted for ranks that join late.
      v1::Control halt;
      *halt.mutable_halt() = *halt_;
      it->second.stream->Send(std::move(halt));
    }
    done(AttachResult{id, resume});
  });
}

void JobPipeline::CloseConnection(uint64_t connection_id, bool goodbye, const std::string& reason,
                                  bool collector_stopping, const std::string& exit_error) {
  auto it = connections_.find(connection_id);
  if (it == connections_.end()) return;
  const StreamKey key = it->second.key;
  v1::LogRecord record;
  v1::StreamClosed* closed = record.mutable_stream_closed();
  closed->set_rank(key.rank);
  closed->set_agent_instance_id(key.agent_instance_id);
  closed->set_goodbye(goodbye);
  closed->set_reason(reason);
  closed->set_collector_stopping(collector_stopping);
  closed->set_error(exit_error);
  if (AppendRecord(record).ok()) Analyse(std::move(record));  // a failure shows at the next Sync
  connections_.erase(it);
  if (auto rank_it = connection_by_rank_.find(key.rank);
      rank_it != connection_by_rank_.end() && rank_it->second == connection_id) {
    connection_by_rank_.erase(rank_it);
    v1::RankStatus& r = ranks_[key.rank];
    r.set_connected(false);
    if (goodbye) r.set_said_goodbye(true);
    r.set_exit_error(exit_error);
    // An abnormal end said is not a vanished rank, yet the job did not end
    // cleanly: the job's state counts it with the vanished.
    if ((goodbye && exit_error.empty()) || collector_stopping) {
      vanished_ranks_.erase(key.rank);
    } else {
      vanished_ranks_.insert(key.rank);
    }
    r.set_last_seen_unix_ns(NowUnixNs());
    dirty_ranks_[key.rank] = true;
    summary_changed_ = true;
  }
  IndexStream(key);
  IndexSegments();
}

// ---------------------------------------------------------------- batches

absl::Status JobPipeline::AppendBatch(uint64_t connection_id, v1::StreamBatch batch, uint64_t bytes,
                                      std::function<void(absl::Status)> durable) {
  Task task = [this, connection_id, batch = std::move(batch), bytes,
               durable = std::move(durable)](bool) mutable {
    auto it = connections_.find(connection_id);
    if (it == connections_.end()) {
      after_sync_.push_back([this, durable = std::move(durable)](const absl::Status&) {
        durable(absl::AbortedError(absl::StrCat(
            "job ", job_id_, ": the stream is no longer attached (replaced or closed)")));
      });
      return;
    }
    const uint32_t rank = it->second.key.rank;
    const bool refused = !batch.refused_reason().empty();
    const uint64_t sequence = batch.batch().sequence();
    const uint64_t events = static_cast<uint64_t>(batch.batch().kind_size());
    v1::LogRecord record;
    record.mutable_batch()->Swap(&batch);
    const absl::Status appended = AppendRecord(record);
    if (appended.ok()) {
      v1::RankStatus& r = ranks_[rank];
      const int64_t now = record.logged_unix_ns();
      if (refused) {
        r.set_batches_refused(r.batches_refused() + 1);
      } else {
        NoteSteps(rank, record.batch().batch());
        r.set_events_received(r.events_received() + events);
        r.set_batches_received(r.batches_received() + 1);
        r.set_bytes_received(r.bytes_received() + bytes);
        events_total_ += events;
        bytes_total_ += bytes;
        last_event_unix_ns_ = now;
      }
      r.set_last_sequence(sequence);
      r.set_last_seen_unix_ns(now);
      if (record.batch().batch().has_drops())
        *r.mutable_agent_drops() = record.batch().batch().drops();
      dirty_ranks_[rank] = true;
      counters_changed_ = true;
    }
    if (appended.ok() && !refused) Analyse(std::move(record));
    after_sync_.push_back(
        [appended, durable = std::move(durable)](const absl::Status& sync_status) {
          durable(appended.ok() ? sync_status : appended);
        });
  };
  return TryPost(task) ? absl::OkStatus() : Stopped();
}

void JobPipeline::NoteSteps(uint32_t rank, const v1::EventBatch& batch) {
  // One pass over the kind column; the value column is read only for step marks.
  const int n = std::min(batch.kind_size(), batch.value_size());
  bool seen = false;
  uint64_t highest = 0;
  for (int i = 0; i < n; ++i) {
    if (batch.kind(i) != v1::EVENT_KIND_STEP_MARK) continue;
    highest = seen ? std::max(highest, batch.value(i)) : batch.value(i);
    seen = true;
  }
  if (!seen) return;
  auto [it, inserted] = max_step_by_rank_.emplace(rank, highest);
  if (!inserted) it->second = std::max(it->second, highest);
  if (!pending_losses_.empty()) JudgePendingLosses(NowUnixNs());  // a peer went on?
}

void JobPipeline::RecordProbeReply(uint64_t connection_id, v1::ProbeReply reply,
                                   int64_t receive_unix_ns) {
  Post([this, connection_id, reply = std::move(reply), receive_unix_ns](bool run) mutable {
    if (!run) return;
    auto it = connections_.find(connection_id);
    if (it == connections_.end()) return;
    auto probe = it->second.probes_in_flight.find(reply.probe_id());
    if (probe == it->second.probes_in_flight.end()) return;  // unknown or expired probe
    v1::LogRecord record;
    v1::ProbeSample* sample = record.mutable_probe();
    sample->set_rank(it->second.key.rank);
    sample->set_collector_send_unix_ns(probe->second);
    sample->set_collector_receive_unix_ns(receive_unix_ns);
    *sample->mutable_reply() = std::move(reply);
    it->second.probes_in_flight.erase(probe);
    if (AppendRecord(record).ok()) Analyse(std::move(record));
  });
}

void JobPipeline::Detach(uint64_t connection_id, std::optional<v1::Goodbye> goodbye,
                         std::string reason) {
  Post([this, connection_id, goodbye = std::move(goodbye), reason = std::move(reason)](bool run) {
    if (!run) return;
    auto it = connections_.find(connection_id);
    if (it == connections_.end()) return;
    const uint32_t rank = it->second.key.rank;
    const bool current =
        connection_by_rank_.count(rank) && connection_by_rank_[rank] == connection_id;
    CloseConnection(connection_id, goodbye.has_value(), reason, /*collector_stopping=*/false,
                    goodbye ? goodbye->error() : "");
    if (goodbye && current) *ranks_[rank].mutable_agent_drops() = goodbye->drops();
    if (!goodbye && current && !halted_) OnRankLost(rank);
    // A goodbye may end a pending loss's grace (the job is ending); the last
    // rank gone decides the ones left.
    JudgePendingLosses(NowUnixNs());
  });
}

void JobPipeline::EndStreams(absl::Status status) {
  Post([this, status = std::move(status)](bool run) {
    if (!run) return;
    ending_ = status;
    // After this round's completions, so the acks already due go out first.
    after_sync_.push_back([this, status](const absl::Status&) {
      for (auto& [id, connection] : connections_) connection.stream->Finish(status);
    });
  });
}

}  // namespace trainscope::collector
