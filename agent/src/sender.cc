#include "sender.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/gpu_event_queue.h"
#include "trainscope/agent/agent.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::agent {

namespace {

// Planning figures for a batch in memory: columns take at most 84 bytes per
// event (GPU collectives; 56 for CPU collectives, 68 for other GPU events, 40
// for the rest) and a message carries fixed overhead and its strings. The
// exact size is checked after encoding; these keep that check from discarding
// drained records in the common case.
constexpr uint64_t kPlannedBytesPerEvent = 96;
constexpr uint64_t kPlannedBytesPerBatch = 4096;
// Keeps a batch's string table well under kMaxMessageBytes.
constexpr size_t kMaxStringsPerBatch = (kMaxMessageBytes / 4) / Agent::kMaxStringBytes;
// Batches written per loop turn, so acknowledgements are handled in between.
constexpr int kMaxWritesPerTurn = 32;
// Longest wait for a connection per sender loop turn (gRPC backs off the dialing).
constexpr absl::Duration kConnectPoll = absl::Milliseconds(20);
// A dead connection is reported once it has been down this long.
constexpr absl::Duration kReportDownAfter = absl::Seconds(2);
// Time the collector gets to close the stream after Goodbye.
constexpr absl::Duration kMinGoodbyeGrace = absl::Milliseconds(100);
// How long Shutdown waits past its deadline before cancelling a blocked write.
constexpr absl::Duration kShutdownSlack = absl::Milliseconds(500);

bool IsPermanentRefusal(absl::StatusCode code) {
  return code == absl::StatusCode::kFailedPrecondition ||
         code == absl::StatusCode::kPermissionDenied ||
         code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kUnauthenticated;
}

}  // namespace

Sender::Sender(AgentHooks agent, const AgentOptions& options, Identity identity,
               StringTable* strings, RingRegistry* rings, std::unique_ptr<Transport> transport)
    : agent_(std::move(agent)),
      options_(options),
      identity_(identity),
      strings_(strings),
      rings_(rings),
      transport_(std::move(transport)),
      max_message_bytes_(static_cast<uint64_t>(kMaxMessageBytes)),
      flush_interval_(options.flush_interval),
      backoff_(options.reconnect_min),
      jitter_rng_(identity.instance_id) {
  encoder_.set_clock_perturbation(identity_.clock_perturbation);
  base::MutexLock lock(&mu_);
  job_token_ = options.job_token;
}

Sender::~Sender() {
  if (thread_.joinable()) Shutdown(absl::ZeroDuration());
}

void Sender::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Sender::Shutdown(absl::Duration deadline, std::string error) {
  if (!thread_.joinable()) return;
  deadline = std::max(deadline, absl::ZeroDuration());
  bool finished;
  {
    base::MutexLock lock(&mu_);
    shutdown_requested_ = true;
    shutdown_deadline_ = absl::Now() + deadline;
    shutdown_error_ = std::move(error);
    wake_cv_.SignalAll();
    const absl::Time until = absl::Now() + deadline + kShutdownSlack;
    while (!finished_ && !finished_cv_.WaitWithDeadline(&mu_, until)) {
    }
    finished = finished_;
  }
  // The sender is stuck in a stream write (collector not reading): abort it.
  if (!finished) transport_->Cancel();
  thread_.join();
}

Sender::Counters Sender::counters() const {
  Counters c;
  c.dropped_buffer_full = dropped_buffer_full_.load(std::memory_order_relaxed);
  c.dropped_shutdown_unacked = dropped_shutdown_unacked_.load(std::memory_order_relaxed);
  c.events_refused = events_refused_.load(std::memory_order_relaxed);
  c.events_acked = events_acked_.load(std::memory_order_relaxed);
  c.batches_sent = batches_sent_.load(std::memory_order_relaxed);
  c.batches_acked = batches_acked_.load(std::memory_order_relaxed);
  c.reconnects = reconnects_.load(std::memory_order_relaxed);
  c.connected = connected_.load(std::memory_order_relaxed);
  base::MutexLock lock(&mu_);
  c.finished = finished_;
  c.loss_reports_submitted = loss_reports_submitted_;
  c.loss_reports_dropped = loss_reports_dropped_;
  return c;
}

bool Sender::SubmitLossReport(v1::LossReport report) {
  const uint64_t bytes = report.ByteSizeLong();
  base::MutexLock lock(&mu_);
  if (shutdown_requested_ || loss_report_bytes_ + bytes > Agent::kMaxPendingLossReportBytes) {
    ++loss_reports_dropped_;
    return false;
  }
  loss_report_bytes_ += bytes;
  ++loss_reports_submitted_;
  loss_reports_.push_back(std::move(report));
  return true;
}

std::string Sender::job_token() const {
  base::MutexLock lock(&mu_);
  return job_token_;
}

void Sender::OnControl(v1::Control control, int64_t receive_ns) {
  // Recording, the loss-contribution switch and halt take effect at once and
  // in stream order; the rest is the sender thread's business.
  switch (control.body_case()) {
    case v1::Control::kSetRecording:
      agent_.apply_recording(control.set_recording().enabled(),
                             control.set_recording().sampling_period());
      return;
    case v1::Control::kSetLossContribution:
      agent_.apply_loss_contribution(control.set_loss_contribution().enabled(),
                                     /*only_if_changed=*/false);
      return;
    case v1::Control::kHalt: {
      HaltInfo info;
      info.halt_id = control.halt().halt_id();
      info.reason = control.halt().reason();
      info.requested_by = control.halt().requested_by();
      info.requested_unix_ns = control.halt().requested_unix_ns();
      info.halt_at_step = control.halt().halt_at_step();
      agent_.apply_halt(std::move(info));
      return;
    }
    case v1::Control::kHelloAck:
      agent_.apply_recording(control.hello_ack().recording(),
                             control.hello_ack().sampling_period());
      if (control.hello_ack().has_loss_contribution()) {
        agent_.apply_loss_contribution(control.hello_ack().loss_contribution(),
                                       /*only_if_changed=*/true);
      }
      break;
    default:
      break;
  }
  {
    base::MutexLock lock(&mu_);
    inbox_.push_back(Inbound{std::move(control), receive_ns, epoch_});
  }
  wake_cv_.SignalAll();
}

void Sender::OnStreamEnd() {
  {
    base::MutexLock lock(&mu_);
    stream_ended_ = true;
  }
  wake_cv_.SignalAll();
}

bool Sender::HasWork() const {
  return !inbox_.empty() || stream_ended_ || (shutdown_requested_ && !shutdown_seen_);
}

void Sender::Run() {
  const absl::Time start = absl::Now();
  next_flush_ = start;
  next_attempt_ = start;
  while (true) {
    ProcessInbox();
    const absl::Time now = absl::Now();
    if (state_ == State::kAwaitingHelloAck && now >= hello_deadline_) {
      Disconnect(absl::StrCat("no HelloAck within ", absl::FormatDuration(options_.hello_timeout)));
    }
    if (state_ == State::kDisconnected && now >= next_attempt_) TryOpen(now);
    if (final_ || now >= next_flush_) {
      Drain();
      next_flush_ = now + flush_interval_;
    }
    if (state_ == State::kStreaming) SendPending();
    if (final_ && ((queue_.empty() && Totals().waiting == 0) || absl::Now() >= final_deadline_)) {
      break;
    }
    if (state_ == State::kStreaming && next_to_send_ < queue_.size()) continue;

    absl::Time wake = next_flush_;
    if (state_ == State::kDisconnected) wake = std::min(wake, next_attempt_);
    if (state_ == State::kAwaitingHelloAck) wake = std::min(wake, hello_deadline_);
    if (final_) wake = std::min(wake, final_deadline_);
    base::MutexLock lock(&mu_);
    while (!HasWork() && !wake_cv_.WaitWithDeadline(&mu_, wake)) {
    }
  }
  FinishRun();
}

void Sender::ProcessInbox() {
  std::vector<Inbound> items;
  bool ended;
  uint64_t epoch;
  {
    base::MutexLock lock(&mu_);
    items.swap(inbox_);
    ended = stream_ended_;
    epoch = epoch_;
    if (shutdown_requested_ && !shutdown_seen_) {
      shutdown_seen_ = true;
      final_ = true;
      final_deadline_ = shutdown_deadline_;
      final_error_ = shutdown_error_;
    }
  }
  for (Inbound& item : items) {
    const v1::Control& control = item.control;
    const bool current = item.epoch == epoch;
    switch (control.body_case()) {
      case v1::Control::kHelloAck:
        if (current && state_ == State::kAwaitingHelloAck) HandleHelloAck(control.hello_ack());
        break;
      case v1::Control::kAck:
        // Durable is durable, whichever stream said so.
        HandleAck(control.ack().up_to_sequence());
        break;
      case v1::Control::kReject:
        HandleReject(control.reject());
        break;
      case v1::Control::kProbe:
        if (current && state_ == State::kStreaming) HandleProbe(control.probe(), item.receive_ns);
        break;
      default:
        break;
    }
  }
  if (ended && state_ != State::kDisconnected) Disconnect("the collector ended the stream");
}

void Sender::HandleHelloAck(const v1::HelloAck& ack) {
  state_ = State::kStreaming;
  connected_.store(true, std::memory_order_relaxed);
  backoff_ = options_.reconnect_min;
  last_refusal_.clear();
  if (ever_streamed_ || announced_down_) {
    if (ever_streamed_) reconnects_.fetch_add(1, std::memory_order_relaxed);
    Log(absl::StrCat("connected to the collector at ", options_.collector_address));
  }
  ever_streamed_ = true;
  announced_down_ = false;
  if (!ack.job_token().empty()) {
    base::MutexLock lock(&mu_);
    job_token_ = ack.job_token();
  }
  // The collector holds everything up to resume_after_sequence already.
  HandleAck(ack.resume_after_sequence());
  next_to_send_ = 0;
  if (ack.max_message_bytes() > 0) {
    max_message_bytes_ =
        std::min<uint64_t>(ack.max_message_bytes(), static_cast<uint64_t>(kMaxMessageBytes));
  }
  RefitQueue();
}

uint64_t Sender::BatchByteLimit() const {
  return max_message_bytes_ > kBatchFramingBytes ? max_message_bytes_ - kBatchFramingBytes : 1;
}

void Sender::RefitQueue() {
  const uint64_t limit = BatchByteLimit();
  bool fits = true;
  for (const Queued& queued : queue_) fits = fits && queued.message.batch().ByteSizeLong() <= limit;
  if (fits || queue_.empty()) return;
  std::deque<Queued> old;
  old.swap(queue_);
  queue_bytes_ = 0;
  next_sequence_ = old.front().sequence;
  uint64_t too_large = 0;
  for (Queued& queued : old) {
    BatchSplit split = SplitBatch(std::move(*queued.message.mutable_batch()), limit);
    too_large += split.events_too_large;
    for (v1::EventBatch& piece : split.batches) {
      Queued refit;
      refit.events = static_cast<uint64_t>(piece.kind_size());
      refit.sequence = next_sequence_++;
      piece.set_sequence(refit.sequence);
      *refit.message.mutable_batch() = std::move(piece);
      // Within the memory budget still: the pieces hold what the batch held
      // plus a string table each.
      refit.bytes = refit.message.SpaceUsedLong();
      queue_bytes_ += refit.bytes;
      queue_.push_back(std::move(refit));
    }
  }
  if (too_large > 0) {
    dropped_buffer_full_.fetch_add(too_large, std::memory_order_relaxed);
    Log(absl::StrCat(too_large, " events are each larger than the collector's message limit of ",
                     max_message_bytes_, " bytes: dropped (counted as buffer_full)"));
  }
}

bool Sender::Enqueue(v1::EventBatch batch, uint64_t bound) {
  BatchSplit split = SplitBatch(std::move(batch), BatchByteLimit());
  if (split.events_too_large > 0) {
    dropped_buffer_full_.fetch_add(split.events_too_large, std::memory_order_relaxed);
    Log(absl::StrCat(split.events_too_large,
                     " events are each larger than the collector's message limit of ",
                     max_message_bytes_, " bytes: dropped (counted as buffer_full)"));
  }
  bool all = true;
  for (v1::EventBatch& piece : split.batches) {
    Queued queued;
    queued.events = static_cast<uint64_t>(piece.kind_size());
    *queued.message.mutable_batch() = std::move(piece);
    queued.bytes = queued.message.SpaceUsedLong();
    if (queue_bytes_ + queued.bytes > bound) {
      dropped_buffer_full_.fetch_add(queued.events, std::memory_order_relaxed);
      all = false;
      continue;
    }
    queued.sequence = next_sequence_++;
    queued.message.mutable_batch()->set_sequence(queued.sequence);
    queue_bytes_ += queued.bytes;
    queue_.push_back(std::move(queued));
  }
  return all;
}

void Sender::HandleAck(uint64_t up_to_sequence) {
  while (!queue_.empty() && queue_.front().sequence <= up_to_sequence) {
    events_acked_.fetch_add(queue_.front().events, std::memory_order_relaxed);
    batches_acked_.fetch_add(1, std::memory_order_relaxed);
    queue_bytes_ -= queue_.front().bytes;
    queue_.pop_front();
    if (next_to_send_ > 0) --next_to_send_;
  }
}

void Sender::HandleReject(const v1::Reject& reject) {
  auto it = std::lower_bound(
      queue_.begin(), queue_.end(), reject.sequence(),
      [](const Queued& queued, uint64_t sequence) { return queued.sequence < sequence; });
  if (it == queue_.end() || it->sequence != reject.sequence()) return;
  if (rejects_logged_ < 5) {
    ++rejects_logged_;
    Log(absl::StrCat("the collector refused batch ", reject.sequence(), " (", it->events,
                     " events): ", reject.reason()));
  }
  events_refused_.fetch_add(it->events, std::memory_order_relaxed);
  queue_bytes_ -= it->bytes;
  const auto index = static_cast<size_t>(it - queue_.begin());
  queue_.erase(it);
  if (index < next_to_send_) --next_to_send_;
}

void Sender::HandleProbe(const v1::ProbeRequest& probe, int64_t receive_ns) {
  v1::AgentMessage message;
  v1::ProbeReply* reply = message.mutable_probe_reply();
  reply->set_probe_id(probe.probe_id());
  const ClockPerturbation& clock = identity_.clock_perturbation;
  const int64_t send_ns = Agent::Now();
  reply->set_agent_receive_ns(clock.active() ? clock.Apply(receive_ns) : receive_ns);
  reply->set_clock_domain("monotonic");
  reply->set_agent_send_ns(clock.active() ? clock.Apply(send_ns) : send_ns);
  if (!transport_->Write(message)) Disconnect("stream write failed");
}

void Sender::TryOpen(absl::Time now) {
  // Waiting here drives the connection attempt, bounded so draining goes on.
  const absl::Duration max_wait = std::clamp(next_flush_ - now, absl::ZeroDuration(), kConnectPoll);
  if (!transport_->ReadyToOpen(max_wait)) {
    if (first_unready_ == absl::InfinitePast()) first_unready_ = now;
    if (!announced_down_ && now - first_unready_ >= kReportDownAfter) {
      announced_down_ = true;
      Log(absl::StrCat("the collector at ", options_.collector_address,
                       " is not reachable; retrying with backoff"));
    }
    next_attempt_ = absl::Now();  // the wait above paced this
    return;
  }
  first_unready_ = absl::InfinitePast();
  {
    base::MutexLock lock(&mu_);
    ++epoch_;
    stream_ended_ = false;
  }
  if (absl::Status status = transport_->Open(this); !status.ok()) {
    Log(absl::StrCat("could not open a stream: ", status.ToString()));
    ScheduleRetry(false);
    return;
  }
  state_ = State::kAwaitingHelloAck;
  hello_deadline_ = now + options_.hello_timeout;
  if (!transport_->Write(MakeHello())) Disconnect("could not send Hello");
}

void Sender::DrainLossReports() {
  std::vector<v1::LossReport> reports;
  {
    base::MutexLock lock(&mu_);
    if (loss_reports_.empty()) return;
    reports.swap(loss_reports_);
    loss_report_bytes_ = 0;
  }
  Queued queued;
  v1::EventBatch* batch = queued.message.mutable_batch();
  *batch->mutable_drops() = CurrentDrops(0);
  const size_t count = reports.size();
  for (v1::LossReport& report : reports) *batch->add_loss_reports() = std::move(report);
  queued.bytes = queued.message.SpaceUsedLong();
  if (queue_bytes_ + queued.bytes > options_.memory_budget_bytes) {
    base::MutexLock lock(&mu_);
    loss_reports_dropped_ += count;
    return;
  }
  queued.sequence = next_sequence_++;
  batch->set_sequence(queued.sequence);
  queue_bytes_ += queued.bytes;
  queue_.push_back(std::move(queued));
}

void Sender::Drain() {
  DrainLossReports();
  const std::vector<std::shared_ptr<ThreadRing>> rings = rings_->Snapshot();
  if (rings.empty() && (gpu_events_ == nullptr || gpu_events_->waiting() == 0)) return;
  const uint64_t ring_bytes = rings_->bytes_in_use();
  const uint64_t bound =
      options_.memory_budget_bytes > ring_bytes ? options_.memory_budget_bytes - ring_bytes : 0;

  // Poll faster while rings fill up, slower again when they stay nearly empty.
  double fullest = 0;
  for (const auto& ring : rings) {
    const size_t capacity = ring->ring().capacity();
    if (capacity > 0) {
      fullest = std::max(fullest, static_cast<double>(ring->ring().size()) / capacity);
    }
  }
  if (fullest > 0.5) {
    flush_interval_ = std::max(absl::Milliseconds(1), flush_interval_ / 2);
  } else if (fullest < 0.125) {
    flush_interval_ = std::min(options_.flush_interval, flush_interval_ * 2);
  }

  while (true) {
    const uint64_t used = queue_bytes_ + kPlannedBytesPerBatch;
    const uint64_t room = bound > used ? bound - used : 0;
    const size_t limit = static_cast<size_t>(
        std::min<uint64_t>(options_.max_batch_events, room / kPlannedBytesPerEvent));
    if (limit == 0) break;  // at the memory bound: leave the records in the rings
    for (size_t k = 0; k < rings.size() && encoder_.events() < limit; ++k) {
      ThreadRing& ring = *rings[(drain_cursor_ + k) % rings.size()];
      const uint32_t thread_id = ring.os_thread_id();
      ring.ring().Consume(limit - encoder_.events(),
                          [&](const EventRecord& record) { encoder_.Add(record, thread_id); });
      if (encoder_.distinct_strings() >= kMaxStringsPerBatch) break;
    }
    if (gpu_events_ != nullptr && encoder_.events() < limit &&
        encoder_.distinct_strings() < kMaxStringsPerBatch) {
      gpu_events_->Consume(limit - encoder_.events(),
                           [&](const GpuEventRecord& event) { encoder_.AddGpu(event); });
    }
    if (!rings.empty()) drain_cursor_ = (drain_cursor_ + 1) % rings.size();
    const size_t events = encoder_.events();
    if (events == 0) break;

    if (!Enqueue(encoder_.Finish(*strings_, CurrentDrops(0)), bound)) break;
    if (events < limit && encoder_.distinct_strings() < kMaxStringsPerBatch) break;  // drained
  }
  rings_->RetireExitedAndEmpty();
}

void Sender::SendPending() {
  for (int writes = 0;
       state_ == State::kStreaming && next_to_send_ < queue_.size() && writes < kMaxWritesPerTurn;
       ++writes) {
    if (!transport_->Write(queue_[next_to_send_].message)) {
      Disconnect("stream write failed");
      return;
    }
    ++next_to_send_;
    batches_sent_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Sender::Disconnect(absl::string_view why) {
  const absl::Status status = transport_->Close(absl::ZeroDuration());
  {
    base::MutexLock lock(&mu_);
    stream_ended_ = false;
  }
  const bool was_streaming = state_ == State::kStreaming;
  state_ = State::kDisconnected;
  connected_.store(false, std::memory_order_relaxed);
  next_to_send_ = 0;
  const bool permanent = IsPermanentRefusal(status.code());
  if (permanent) {
    // Said once per distinct message: the collector will keep refusing.
    if (std::string(status.message()) != last_refusal_) {
      last_refusal_ = std::string(status.message());
      Log(absl::StrCat("the collector refused the stream: ", status.ToString(), "; retrying every ",
                       absl::FormatDuration(options_.reconnect_max)));
    }
  } else if (was_streaming || !announced_down_) {
    announced_down_ = true;
    Log(absl::StrCat(why, " (", status.ToString(), "); reconnecting"));
  }
  ScheduleRetry(permanent);
}

void Sender::ScheduleRetry(bool permanent_refusal) {
  if (permanent_refusal) backoff_ = options_.reconnect_max;
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  next_attempt_ = absl::Now() + backoff_ * jitter(jitter_rng_);
  backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
}

void Sender::FinishRun() {
  uint64_t unacked = 0;
  for (const Queued& queued : queue_) unacked += queued.events;
  dropped_shutdown_unacked_.store(unacked, std::memory_order_relaxed);
  if (state_ == State::kStreaming) {
    const RingRegistry::Totals totals = Totals();
    v1::AgentMessage message;
    v1::Goodbye* goodbye = message.mutable_goodbye();
    *goodbye->mutable_drops() = CurrentDrops(unacked + totals.waiting);
    goodbye->set_events_recorded(totals.recorded);
    goodbye->set_error(final_error_);
    transport_->Write(message);
  }
  if (state_ != State::kDisconnected) {
    const absl::Duration grace = std::max(final_deadline_ - absl::Now(), kMinGoodbyeGrace);
    transport_->Close(grace).IgnoreError();
  }
  state_ = State::kDisconnected;
  connected_.store(false, std::memory_order_relaxed);
  queue_.clear();
  queue_bytes_ = 0;
  {
    base::MutexLock lock(&mu_);
    finished_ = true;
  }
  finished_cv_.SignalAll();
}

v1::AgentMessage Sender::MakeHello() const {
  v1::AgentMessage message;
  v1::Hello* hello = message.mutable_hello();
  hello->set_protocol_version(kProtocolVersion);
  hello->set_job_id(options_.job_id);
  hello->set_run_id(options_.run_id);
  hello->set_restart_count(options_.restart_count);
  hello->set_rank(options_.rank);
  hello->set_world_size(options_.world_size);
  hello->set_local_rank(options_.local_rank);
  hello->set_host(options_.host);
  hello->set_device(options_.device);
  hello->set_pid(identity_.pid);
  hello->set_framework(options_.framework);
  hello->set_framework_version(options_.framework_version);
  v1::ClockDomain* clock = hello->add_clock_domains();
  clock->set_name("monotonic");
  clock->set_realtime_minus_domain_ns(identity_.realtime_minus_monotonic_ns);
  clock->set_domain_id(identity_.clock_domain_id);
  hello->set_agent_instance_id(identity_.instance_id);
  hello->set_job_token(job_token());
  hello->set_agent_version(kTrainscopeVersion);
  hello->set_recording(agent_.recording());
  if (!options_.halt_when.empty() || options_.halt_below_efficiency > 0) {
    v1::HaltPolicy* policy = hello->mutable_halt_policy();
    for (const std::string& rule : options_.halt_when) policy->add_halt_when(rule);
    policy->set_below_efficiency(options_.halt_below_efficiency);
    policy->set_for_steps(options_.halt_for_steps);
    policy->set_enabled(true);
  }
  return message;
}

RingRegistry::Totals Sender::Totals() const {
  RingRegistry::Totals totals = rings_->Sum();
  if (gpu_events_ != nullptr) gpu_events_->AddTo(&totals);
  return totals;
}

v1::DropCounters Sender::CurrentDrops(uint64_t shutdown) const {
  v1::DropCounters drops;
  drops.set_ring_full(Totals().dropped_full + agent_.orphan_drops());
  drops.set_buffer_full(dropped_buffer_full_.load(std::memory_order_relaxed));
  drops.set_shutdown(shutdown);
  return drops;
}

void Sender::Log(const std::string& line) const {
  if (!options_.log_to_stderr) return;
  std::fprintf(stderr, "trainscope-agent [job %s rank %u]: %s\n", options_.job_id.c_str(),
               options_.rank, line.c_str());
}

}  // namespace trainscope::agent
