#include "trainscope/tier/upstream_consumer.h"

#include <cstdio>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace trainscope::tier {

UpstreamConsumer::UpstreamConsumer(UpstreamConsumerOptions options,
                                   collector::JobRegistry* registry,
                                   collector::BadInputCounters* counters)
    : options_(std::move(options)),
      registry_(registry),
      counters_in_(counters),
      budget_(options_.max_queued_bytes) {}

std::unique_ptr<UpstreamConsumer> UpstreamConsumer::Start(UpstreamConsumerOptions options,
                                                          collector::JobRegistry* registry,
                                                          collector::BadInputCounters* counters) {
  std::unique_ptr<UpstreamConsumer> consumer(
      new UpstreamConsumer(std::move(options), registry, counters));
  consumer->fetch_thread_ = std::thread([c = consumer.get()] { c->FetchLoop(); });
  consumer->deliver_thread_ = std::thread([c = consumer.get()] { c->DeliverLoop(); });
  return consumer;
}

UpstreamConsumer::~UpstreamConsumer() { Stop(); }

void UpstreamConsumer::Stop() {
  {
    base::MutexLock lock(&mu_);
    if (stopping_ && !fetch_thread_.joinable()) return;
    stopping_ = true;
    fetch_wake_.SignalAll();
    deliver_wake_.SignalAll();
  }
  if (fetch_thread_.joinable()) fetch_thread_.join();
  if (deliver_thread_.joinable()) deliver_thread_.join();
  WriteStatus();
  const Counters c = counters();
  Notice(absl::StrCat("trainscope-collector: --upstream: ", c.received, " records received, ",
                      c.duplicates, " duplicates dropped, ", c.acked, " acknowledged, ",
                      c.streams_opened, " rank streams, ", c.commands_sent, " commands sent"));
  // What was not acknowledged comes again to the next consumer. The sessions
  // stay: the server's shutdown ends them as it ends every stream (the ranks
  // did not vanish, this collector stopped).
  {
    base::MutexLock lock(&mu_);
    for (auto& [id, stream] : streams_) {
      for (Pending& p : stream.batches.TakeAll()) Drop(p, false);
      for (auto& [seq, p] : stream.in_flight) Drop(p, false);
      stream.in_flight.clear();
      for (Pending& p : stream.opens) Drop(p, false);
      stream.opens.clear();
      if (stream.close) Drop(*stream.close, false);
      stream.close.reset();
    }
  }
}

UpstreamConsumer::Counters UpstreamConsumer::counters() const {
  base::MutexLock lock(&mu_);
  return counters_;
}

void UpstreamConsumer::WriteStatus() const {
  if (options_.status_file.empty()) return;
  const Counters c = counters();
  const std::filesystem::path tmp = options_.status_file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "connected " << (c.connected ? 1 : 0) << "\nreceived " << c.received << "\nduplicates "
        << c.duplicates << "\nacked " << c.acked << "\nmalformed " << c.malformed << "\nrefused "
        << c.refused << "\nstreams_opened " << c.streams_opened << "\ncommands_sent "
        << c.commands_sent << "\nlast_latency_ns " << c.last_latency_ns << "\n";
    if (!out) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, options_.status_file, ec);
}

void UpstreamConsumer::Notice(absl::string_view line) const {
  if (options_.notice) {
    options_.notice(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

// ------------------------------------------------------------ fetch thread

void UpstreamConsumer::FetchLoop() {
  std::unique_ptr<JetStreamPuller> puller;
  bool said_unreachable = false;
  bool said_consuming = false;
  for (;;) {
    {
      // Hold fetching while too much waits in memory (the sessions' pace).
      const absl::Time until = absl::Now() + absl::Seconds(1);
      base::MutexLock lock(&mu_);
      while (!stopping_ && held_ >= static_cast<size_t>(options_.max_ack_pending) &&
             !fetch_wake_.WaitWithDeadline(&mu_, until)) {
      }
      if (stopping_) break;
      if (held_ >= static_cast<size_t>(options_.max_ack_pending)) continue;
    }
    if (puller == nullptr) {
      absl::Status ready = absl::OkStatus();
      if (client_ == nullptr) {
        absl::StatusOr<std::unique_ptr<NatsClient>> connected = NatsClient::Connect(options_.nats);
        if (connected.ok()) {
          client_ = std::move(*connected);
        } else {
          ready = connected.status();
        }
      }
      if (ready.ok()) ready = client_->EnsureStream(kRecordsStream, kAllRecords, options_.limits);
      if (ready.ok()) ready = client_->EnsureStream(kCommandsStream, kAllCommands, options_.limits);
      if (ready.ok()) {
        JetStreamPullerOptions p;
        p.stream = kRecordsStream;
        p.durable = options_.durable;
        p.filter = options_.filter;
        p.ack_wait = options_.ack_wait;
        p.max_ack_pending = options_.max_ack_pending;
        absl::StatusOr<std::unique_ptr<JetStreamPuller>> started =
            JetStreamPuller::Start(client_.get(), std::move(p));
        if (started.ok()) {
          puller = std::move(*started);
        } else {
          ready = started.status();
        }
      }
      if (!ready.ok()) {
        if (!said_unreachable) {
          Notice(absl::StrCat("trainscope-collector: --upstream: ", ready.message(),
                              "; retrying every second"));
          said_unreachable = true;
        }
        const absl::Time retry_at = absl::Now() + absl::Seconds(1);
        base::MutexLock lock(&mu_);
        counters_.connected = false;
        while (!stopping_ && !fetch_wake_.WaitWithDeadline(&mu_, retry_at)) {
        }
        continue;
      }
      connected_client_.store(client_.get());
      if (!said_consuming) {
        Notice(absl::StrCat("trainscope-collector: consuming ", options_.filter, " from NATS at ",
                            UrlWithoutCredentials(options_.nats.url), " as durable ",
                            options_.durable));
        said_consuming = true;
      }
      said_unreachable = false;
      base::MutexLock lock(&mu_);
      counters_.connected = true;
    }
    absl::StatusOr<std::vector<natsMsg*>> msgs = puller->Next(256, absl::Milliseconds(250));
    if (!msgs.ok()) {
      // The subscription or the consumer is gone (NATS restarted without
      // it, or JetStream is not up yet): bind again shortly.
      puller.reset();
      const absl::Time retry_at = absl::Now() + absl::Milliseconds(250);
      base::MutexLock lock(&mu_);
      counters_.connected = client_->connected();
      while (!stopping_ && !fetch_wake_.WaitWithDeadline(&mu_, retry_at)) {
      }
      continue;
    }
    if (msgs->empty()) continue;
    std::vector<std::shared_ptr<collector::AgentSession>> starts;
    {
      base::MutexLock lock(&mu_);
      counters_.connected = true;
      for (natsMsg* msg : *msgs) Route(msg);  // Route owns it now
      starts.swap(to_start_);
    }
    for (auto& session : starts) session->Start();
  }
}

UpstreamConsumer::Stream& UpstreamConsumer::OpenStream(const v1::TierRecord& record) {
  const uint64_t id = next_id_++;
  Stream& stream = streams_[id];
  stream.id = id;
  stream.key = KeyOf(record);
  stream.node = record.node();
  stream.hello = record.hello();
  stream.transport = std::make_shared<TierAgentStream>(id, this);
  stream.session = collector::AgentSession::Create(
      registry_, stream.transport, &budget_, counters_in_, absl::StrCat("nats:", record.node()));
  by_key_[stream.key] = id;
  ++counters_.streams_opened;
  to_start_.push_back(stream.session);  // Start asks for the Hello, outside the lock
  return stream;
}

void UpstreamConsumer::Route(natsMsg* msg) {
  ++counters_.received;
  auto record = std::make_shared<v1::TierRecord>();
  Pending pending{msg, record};
  if (!record->ParseFromArray(natsMsg_GetData(msg), natsMsg_GetDataLength(msg)) ||
      record->body_case() == v1::TierRecord::BODY_NOT_SET || record->job_id().empty()) {
    ++counters_.malformed;
    Notice(absl::StrCat("trainscope-collector: --upstream: a message on ", natsMsg_GetSubject(msg),
                        " is not a TierRecord (job_id and a body expected); terminated"));
    JetStreamPuller::Term(Connection(), msg);
    natsMsg_Destroy(msg);
    return;
  }
  ++held_;
  const StreamKey key = KeyOf(*record);
  const bool is_batch = record->has_batch();
  const uint64_t sequence = is_batch ? record->batch().batch().sequence() : 0;
  auto found = by_key_.find(key);
  if (found == by_key_.end()) {
    if (auto ended = ended_.find(key);
        ended != ended_.end() && (!is_batch || sequence <= ended->second)) {
      // A late copy of a stream that ended here: nothing new in it.
      ++counters_.duplicates;
      Ack(pending);
      return;
    }
    if (record->has_closed() && record->closed().collector_stopping()) {
      ++counters_.duplicates;
      Ack(pending);
      return;
    }
    found = by_key_.emplace(key, OpenStream(*record).id).first;
  }
  Stream& stream = streams_.at(found->second);
  switch (record->body_case()) {
    case v1::TierRecord::kOpened:
      // The rank (re)attached to its node: the stream here goes on.
      stream.hello = record->hello();
      if (stream.attached) {
        Ack(pending);
      } else {
        stream.opens.push_back(std::move(pending));
      }
      break;
    case v1::TierRecord::kBatch:
      if (stream.batches.Add(sequence, pending) == StreamResequencer<Pending>::Offer::kDuplicate) {
        ++counters_.duplicates;
        // Already durable here: ack this copy. Still on its way: the first
        // copy's ack covers it.
        if (stream.attached && sequence <= stream.batches.last() &&
            stream.in_flight.count(sequence) == 0) {
          Ack(pending);
        } else {
          Drop(pending, false);
        }
      }
      break;
    case v1::TierRecord::kClosed:
      if (record->closed().collector_stopping()) {
        // The node collector stopped, the rank did not end: it reconnects
        // to the node, and its stream here goes on.
        Ack(pending);
      } else if (stream.close) {
        ++counters_.duplicates;
        Drop(pending, false);
      } else {
        stream.close = std::move(pending);
      }
      break;
    default:
      break;
  }
  events_.push_back(Event{Event::kRead, stream.id, {}, {}});  // something to pump
  deliver_wake_.Signal();
}

// ---------------------------------------------------------- delivery thread

void UpstreamConsumer::Ack(Pending& pending) {
  if (pending.msg == nullptr) return;
  JetStreamPuller::Ack(Connection(), pending.msg);
  natsMsg_Destroy(pending.msg);
  pending.msg = nullptr;
  ++counters_.acked;
  if (held_ > 0) --held_;
  fetch_wake_.Signal();
}

void UpstreamConsumer::Drop(Pending& pending, bool terminate) {
  if (pending.msg == nullptr) return;
  if (terminate) JetStreamPuller::Term(Connection(), pending.msg);
  natsMsg_Destroy(pending.msg);
  pending.msg = nullptr;
  if (held_ > 0) --held_;
  fetch_wake_.Signal();
}

void UpstreamConsumer::OnControl(uint64_t stream_id, v1::Control control) {
  base::MutexLock lock(&mu_);
  events_.push_back(Event{Event::kControl, stream_id, std::move(control), {}});
  deliver_wake_.Signal();
}

void UpstreamConsumer::OnReadRequested(uint64_t stream_id) {
  base::MutexLock lock(&mu_);
  if (auto it = streams_.find(stream_id); it != streams_.end()) it->second.read_requested = true;
  events_.push_back(Event{Event::kRead, stream_id, {}, {}});
  deliver_wake_.Signal();
}

void UpstreamConsumer::OnFinish(uint64_t stream_id, absl::Status status) {
  base::MutexLock lock(&mu_);
  events_.push_back(Event{Event::kFinish, stream_id, {}, std::move(status)});
  deliver_wake_.Signal();
}

void UpstreamConsumer::HandleCommand(const Stream& stream, const v1::Control& control) {
  v1::TierCommand command;
  command.set_job_id(stream.key.job_id);
  command.set_issued_by(options_.name);
  command.set_issued_unix_ns(absl::GetCurrentTimeNanos());
  std::string id;
  switch (control.body_case()) {
    case v1::Control::kHalt:
      command.set_kind(v1::TierCommand::KIND_HALT);
      *command.mutable_halt() = control.halt();
      id = absl::StrCat(stream.key.job_id, "/halt/", control.halt().halt_id(), "/",
                        control.halt().requested_unix_ns());
      break;
    case v1::Control::kSetRecording:
      command.set_kind(control.set_recording().enabled() ? v1::TierCommand::KIND_ENABLE_RECORDING
                                                         : v1::TierCommand::KIND_DISABLE_RECORDING);
      command.set_sampling_period(control.set_recording().sampling_period());
      break;
    case v1::Control::kSetLossContribution:
      command.set_kind(control.set_loss_contribution().enabled()
                           ? v1::TierCommand::KIND_ENABLE_LOSS_CONTRIBUTION
                           : v1::TierCommand::KIND_DISABLE_LOSS_CONTRIBUTION);
      break;
    default:
      return;
  }
  if (id.empty()) {
    // One command reaches every rank stream of the job within a moment: one
    // TierCommand per job and kind and second.
    id = absl::StrCat(stream.key.job_id, "/", static_cast<int>(command.kind()), "/",
                      command.sampling_period(), "/", absl::ToUnixSeconds(absl::Now()));
  }
  if (!commands_seen_.Insert(id, absl::Now())) return;
  command.set_command_id(id);
  outbox_.push_back(std::move(command));
  deliver_wake_.Signal();
}

void UpstreamConsumer::PublishCommands() {
  std::vector<v1::TierCommand> outbox;
  {
    base::MutexLock lock(&mu_);
    outbox.swap(outbox_);
  }
  if (outbox.empty()) return;
  NatsClient* client = connected_client_.load();
  std::vector<v1::TierCommand> failed;
  for (v1::TierCommand& command : outbox) {
    natsStatus s = NATS_NOT_YET_CONNECTED;
    if (client != nullptr) {
      const std::string subject = CommandSubject(command.job_id(), command.kind());
      const std::string payload = command.SerializeAsString();
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MsgId = command.command_id().c_str();
      jsPubAck* ack = nullptr;
      jsErrCode err = static_cast<jsErrCode>(0);
      s = js_Publish(&ack, client->js(), subject.c_str(), payload.data(),
                     static_cast<int>(payload.size()), &po, &err);
      if (ack != nullptr) jsPubAck_Destroy(ack);
    }
    if (s == NATS_OK) {
      base::MutexLock lock(&mu_);
      ++counters_.commands_sent;
    } else {
      Notice(absl::StrCat("trainscope-collector: --upstream: the ",
                          v1::TierCommand::Kind_Name(command.kind()), " of job ", command.job_id(),
                          " could not be sent to the nodes yet (", natsStatus_GetText(s),
                          "); retrying"));
      failed.push_back(std::move(command));
    }
  }
  if (!failed.empty()) {
    base::MutexLock lock(&mu_);
    for (auto& c : failed) outbox_.push_back(std::move(c));
    deliver_wake_.Signal();
  }
}

void UpstreamConsumer::HandleEvent(Event& event) {
  auto it = streams_.find(event.stream_id);
  if (it == streams_.end()) return;
  Stream& stream = it->second;
  switch (event.kind) {
    case Event::kRead:
      break;
    case Event::kControl: {
      const v1::Control& control = event.control;
      if (control.has_hello_ack()) {
        stream.attached = true;
        for (Pending& p : stream.batches.Start(control.hello_ack().resume_after_sequence())) {
          ++counters_.duplicates;
          Ack(p);
        }
        for (Pending& p : stream.opens) Ack(p);
        stream.opens.clear();
      } else if (control.has_ack()) {
        const uint64_t up_to = control.ack().up_to_sequence();
        while (!stream.in_flight.empty() && stream.in_flight.begin()->first <= up_to) {
          Pending& p = stream.in_flight.begin()->second;
          if (p.record) {
            counters_.last_latency_ns = absl::GetCurrentTimeNanos() - p.record->logged_unix_ns();
          }
          Ack(p);
          stream.in_flight.erase(stream.in_flight.begin());
        }
      } else if (control.has_reject()) {
        // Logged here as a refusal; a copy would be refused the same way.
        if (auto f = stream.in_flight.find(control.reject().sequence());
            f != stream.in_flight.end()) {
          Ack(f->second);
          stream.in_flight.erase(f);
        }
      } else {
        HandleCommand(stream, control);
      }
      break;
    }
    case Event::kFinish:
      stream.finished = true;
      stream.finish_status = event.status;
      break;
  }
}

void UpstreamConsumer::DeliverLoop() {
  absl::Time next_status = absl::InfinitePast();
  for (;;) {
    if (absl::Now() >= next_status) {
      WriteStatus();
      next_status = absl::Now() + absl::Seconds(1);
    }
    // What to hand to sessions, outside the lock (they call back into it).
    std::vector<std::pair<std::shared_ptr<collector::AgentSession>, v1::AgentMessage>> messages;
    std::vector<std::pair<std::shared_ptr<collector::AgentSession>, std::string>> reads_done;
    std::vector<std::pair<std::shared_ptr<collector::AgentSession>, std::string>> streams_done;
    {
      const absl::Time until = absl::Now() + absl::Milliseconds(200);
      base::MutexLock lock(&mu_);
      while (!stopping_ && events_.empty() && outbox_.empty() &&
             !deliver_wake_.WaitWithDeadline(&mu_, until)) {
      }
      if (stopping_) return;
      std::deque<Event> events;
      events.swap(events_);
      std::set<uint64_t> touched;
      for (Event& event : events) {
        HandleEvent(event);
        touched.insert(event.stream_id);
      }
      for (uint64_t id : touched) {
        auto it = streams_.find(id);
        if (it == streams_.end()) continue;
        Stream& stream = it->second;
        if (stream.finished) {
          const bool refused = !stream.finish_status.ok();
          if (refused) {
            ++counters_.refused;
            Notice(absl::StrCat("trainscope-collector: --upstream: rank ", stream.key.rank,
                                " of job ", stream.key.job_id, " from node ", stream.node,
                                " was refused here: ", stream.finish_status.message()));
          }
          // A refusal would repeat: terminate. A clean end: the rest is durable.
          const bool terminal = refused && (absl::IsPermissionDenied(stream.finish_status) ||
                                            absl::IsInvalidArgument(stream.finish_status));
          for (Pending& p : stream.batches.TakeAll()) refused ? Drop(p, terminal) : Ack(p);
          for (auto& [seq, p] : stream.in_flight) refused ? Drop(p, terminal) : Ack(p);
          for (Pending& p : stream.opens) refused ? Drop(p, terminal) : Ack(p);
          if (stream.close) refused ? Drop(*stream.close, terminal) : Ack(*stream.close);
          if (!refused) ended_[stream.key] = stream.batches.last();
          streams_done.emplace_back(stream.session, "finished");
          by_key_.erase(stream.key);
          streams_.erase(it);
          continue;
        }
        if (!stream.read_requested) continue;
        if (!stream.hello_sent) {
          v1::AgentMessage message;
          *message.mutable_hello() = stream.hello;
          // The node relays the job's token in the Hello over the mutually
          // authenticated NATS link: protocol 1, no challenge to answer here
          // (the rank proved membership to its node; docs/security.md).
          message.mutable_hello()->set_protocol_version(1);
          message.mutable_hello()->set_min_protocol_version(1);
          stream.hello_sent = true;
          stream.read_requested = false;
          messages.emplace_back(stream.session, std::move(message));
          continue;
        }
        if (!stream.attached) continue;
        if (std::optional<Pending> next = stream.batches.PopReady()) {
          v1::AgentMessage message;
          *message.mutable_batch() = next->record->batch().batch();
          const uint64_t sequence = message.batch().sequence();
          stream.in_flight.emplace(sequence, std::move(*next));
          stream.read_requested = false;
          messages.emplace_back(stream.session, std::move(message));
          continue;
        }
        if (stream.close && stream.batches.held() == 0 && stream.in_flight.empty()) {
          const v1::StreamClosed& closed = stream.close->record->closed();
          const bool closed_goodbye = closed.goodbye();
          ended_[stream.key] = stream.batches.last();
          stream.read_requested = false;
          if (closed.goodbye()) {
            v1::AgentMessage message;
            message.mutable_goodbye()->set_error(closed.error());
            messages.emplace_back(stream.session, std::move(message));
            reads_done.emplace_back(stream.session, absl::StrCat("goodbye via node ", stream.node));
          } else {
            streams_done.emplace_back(stream.session,
                                      absl::StrCat("node ", stream.node, ": ", closed.reason()));
          }
          Ack(*stream.close);
          stream.close.reset();
          if (!closed_goodbye) {
            // Nothing is in flight and the session is detached: done here.
            by_key_.erase(stream.key);
            streams_.erase(it);
          }
        }
      }
    }
    for (auto& [session, message] : messages) session->OnMessage(std::move(message));
    for (auto& [session, reason] : reads_done) session->OnReadsDone(reason);
    for (auto& [session, reason] : streams_done) session->OnStreamDone(reason);
    PublishCommands();
  }
}

}  // namespace trainscope::tier
