#include "sender.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/gpu_event_queue.h"
#include "trainscope/agent/agent.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/proto/protocol_version.h"
#include "trainscope/security/membership_proof.h"

namespace trainscope::agent {

namespace {

// Batches written per loop turn, so acknowledgements are handled in between.
constexpr int kMaxWritesPerTurn = 32;
// Longest wait for a connection per sender loop turn (gRPC backs off the dialing).
constexpr absl::Duration kConnectPoll = absl::Milliseconds(20);
// Time the collector gets to close the stream after Goodbye.
constexpr absl::Duration kMinGoodbyeGrace = absl::Milliseconds(100);
// How long Shutdown waits past its deadline before cancelling a blocked write.
constexpr absl::Duration kShutdownSlack = absl::Milliseconds(500);

}  // namespace

Sender::Sender(AgentHooks agent, const AgentOptions& options, Identity identity,
               StringTable* strings, RingRegistry* rings, std::unique_ptr<Transport> transport)
    : agent_(std::move(agent)),
      options_(options),
      identity_(identity),
      rings_(rings),
      transport_(std::move(transport)),
      queue_(static_cast<uint64_t>(kMaxMessageBytes)),
      drainer_(options, rings, strings, identity_.clock_perturbation),
      reconnect_(options.reconnect_min, options.reconnect_max, identity.instance_id,
                 options.collector_address),
      loss_reports_(Agent::kMaxPendingLossReportBytes) {
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
    loss_reports_.Close();
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
  const BatchQueue::Counters queue = queue_.counters();
  c.dropped_buffer_full = queue.dropped_buffer_full;
  c.dropped_shutdown_unacked = dropped_shutdown_unacked_.load(std::memory_order_relaxed);
  c.events_refused = queue.events_refused;
  c.events_acked = queue.events_acked;
  c.batches_sent = batches_sent_.load(std::memory_order_relaxed);
  c.batches_acked = queue.batches_acked;
  c.reconnects = reconnects_.load(std::memory_order_relaxed);
  c.connected = connected_.load(std::memory_order_relaxed);
  base::MutexLock lock(&mu_);
  c.finished = finished_;
  c.refusal = refusal_;
  const LossReportInbox::Counters reports = loss_reports_.counters();
  c.loss_reports_submitted = reports.submitted;
  c.loss_reports_dropped = reports.dropped;
  return c;
}

bool Sender::SubmitLossReport(v1::LossReport report) {
  return loss_reports_.Submit(std::move(report));
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
  while (true) {
    ProcessInbox();
    const absl::Time now = absl::Now();
    if (state_ == State::kAwaitingHelloAck && now >= hello_deadline_) {
      Disconnect(absl::StrCat("no HelloAck within ", absl::FormatDuration(options_.hello_timeout)));
    }
    if (state_ == State::kDisconnected && now >= reconnect_.next_attempt()) TryOpen(now);
    if (final_ || now >= next_flush_) {
      Drain();
      next_flush_ = now + drainer_.flush_interval();
    }
    if (state_ == State::kStreaming) SendPending();
    // Shutting down: done when everything is acknowledged, at the deadline,
    // or at once when the collector refuses the stream for good (it would
    // refuse the same Hello again: waiting only delays the process' exit).
    if (final_ && ((queue_.empty() && Totals().waiting == 0) || absl::Now() >= final_deadline_ ||
                   (refused_ && state_ != State::kStreaming))) {
      break;
    }
    if (state_ == State::kStreaming && queue_.NextToSend() != nullptr) continue;

    absl::Time wake = next_flush_;
    if (state_ == State::kDisconnected) wake = std::min(wake, reconnect_.next_attempt());
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
      case v1::Control::kMembershipChallenge:
        if (current && state_ == State::kAwaitingHelloAck) {
          HandleChallenge(control.membership_challenge());
        }
        break;
      case v1::Control::kHelloAck:
        if (current && state_ == State::kAwaitingHelloAck) HandleHelloAck(control.hello_ack());
        break;
      case v1::Control::kAck:
        // Durable is durable, whichever stream said so.
        queue_.Acknowledge(control.ack().up_to_sequence());
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
  // The collector picks a version this agent speaks; anything else is a
  // collector bug, said rather than spoken past.
  if (absl::StatusOr<uint32_t> version =
          protocol::CheckAckedProtocolVersion(ack.protocol_version());
      !version.ok()) {
    Log(std::string(version.status().message()));
    return Disconnect("the collector chose a protocol version this agent does not speak");
  }
  state_ = State::kStreaming;
  connected_.store(true, std::memory_order_relaxed);
  const ReconnectPolicy::Connected connected = reconnect_.OnConnected();
  if (connected.reconnect) reconnects_.fetch_add(1, std::memory_order_relaxed);
  if (refused_) {
    refused_ = false;
    base::MutexLock lock(&mu_);
    refusal_.clear();
  }
  if (connected.line.has_value()) Log(*connected.line);
  if (!ack.job_token().empty()) {
    issued_token_ = ack.job_token();
    base::MutexLock lock(&mu_);
    job_token_ = ack.job_token();
  }
  // The collector holds everything up to resume_after_sequence already.
  queue_.Acknowledge(ack.resume_after_sequence());
  queue_.RewindSends();
  LogTooLarge(queue_.SetMessageLimit(ack.max_message_bytes()));
}

void Sender::HandleChallenge(const v1::MembershipChallenge& challenge) {
  challenged_ = true;
  v1::AgentMessage message;
  v1::MembershipProof* proof = message.mutable_membership_proof();
  if (challenge.nonce().empty()) {
    // A collector without a job key compares tokens: it gets back only what
    // it issued itself, so no secret this agent was given leaves it.
    proof->set_issued_token(issued_token_);
  } else if (const std::string secret = job_token(); !secret.empty()) {
    const security::MembershipProof::Claim claim{options_.job_id, options_.rank,
                                                 options_.restart_count, identity_.instance_id};
    proof->set_proof(security::MembershipProof::Compute(secret, challenge.nonce(), claim));
  }
  if (!transport_->Write(message)) Disconnect("could not send the membership proof");
}

void Sender::LogTooLarge(uint64_t events) const {
  if (events == 0) return;
  Log(absl::StrCat(events, " events are each larger than the collector's message limit of ",
                   queue_.max_message_bytes(), " bytes: dropped (counted as buffer_full)"));
}

void Sender::HandleReject(const v1::Reject& reject) {
  const std::optional<uint64_t> events = queue_.Refuse(reject.sequence());
  if (!events.has_value() || rejects_logged_ >= 5) return;
  ++rejects_logged_;
  Log(absl::StrCat("the collector refused batch ", reject.sequence(), " (", *events,
                   " events): ", reject.reason()));
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
    if (std::optional<std::string> line = reconnect_.Unreachable(absl::Now())) Log(*line);
    return;
  }
  reconnect_.Reachable();
  {
    base::MutexLock lock(&mu_);
    ++epoch_;
    stream_ended_ = false;
  }
  if (absl::Status status = transport_->Open(this); !status.ok()) {
    Log(absl::StrCat("could not open a stream: ", status.ToString()));
    reconnect_.RetryLater(/*permanent_refusal=*/false, absl::Now());
    return;
  }
  state_ = State::kAwaitingHelloAck;
  challenged_ = false;
  hello_deadline_ = now + options_.hello_timeout;
  if (!transport_->Write(MakeHello())) Disconnect("could not send Hello");
}

void Sender::DrainLossReports() {
  std::vector<v1::LossReport> reports = loss_reports_.Take();
  if (reports.empty()) return;
  v1::EventBatch batch;
  *batch.mutable_drops() = CurrentDrops(0);
  const size_t count = reports.size();
  for (v1::LossReport& report : reports) *batch.add_loss_reports() = std::move(report);
  if (!queue_.PushWhole(batch, options_.memory_budget_bytes)) loss_reports_.CountDropped(count);
}

void Sender::Drain() {
  DrainLossReports();
  drainer_.Drain([this] { return queue_.bytes(); }, [this] { return CurrentDrops(0); },
                 [this](EncodedBatch batch, uint64_t bound) {
                   const BatchQueue::PushResult result = queue_.Push(std::move(batch), bound);
                   LogTooLarge(result.events_too_large);
                   return result.all_queued;
                 });
}

void Sender::SendPending() {
  for (int writes = 0; state_ == State::kStreaming && writes < kMaxWritesPerTurn; ++writes) {
    const std::string* message = queue_.NextToSend();
    if (message == nullptr) return;
    if (!transport_->WriteSerialized(*message)) {
      Disconnect("stream write failed");
      return;
    }
    queue_.MarkSent();
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
  if (ReconnectPolicy::IsPermanentRefusal(status.code())) {
    if (status.code() == absl::StatusCode::kPermissionDenied && !challenged_ && !refused_) {
      // Refused without a challenge: a collector of protocol 1 wants the
      // secret in the Hello, which this agent never sends. Said once per
      // run of refusals, as the refusal itself.
      Log(
          absl::StrCat("the collector refused this agent without a membership challenge: a "
                       "collector older than protocol ",
                       kMembershipChallengeVersion,
                       " wants the job's secret in the Hello, which this agent (trainscope ",
                       kTrainscopeVersion, ") never sends in clear: upgrade the collector"));
    }
    refused_ = true;
    base::MutexLock lock(&mu_);
    refusal_ = status.ToString();
  }
  queue_.RewindSends();
  if (std::optional<std::string> line =
          reconnect_.OnDisconnected(status, why, was_streaming, absl::Now())) {
    Log(*line);
  }
}

void Sender::FinishRun() {
  const uint64_t unacked = queue_.unacknowledged_events();
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
  queue_.Clear();
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
  hello->set_min_protocol_version(kMinProtocolVersion);
  hello->set_job_id(options_.job_id);
  hello->set_run_id(options_.run_id);
  hello->set_restart_count(options_.restart_count);
  hello->set_rank(options_.rank);
  hello->set_world_size(options_.world_size);
  hello->set_local_rank(options_.local_rank);
  hello->set_host(options_.host);
  hello->set_rack(options_.rack);
  hello->set_device(options_.device);
  hello->set_pid(identity_.pid);
  hello->set_framework(options_.framework);
  hello->set_framework_version(options_.framework_version);
  v1::ClockDomain* clock = hello->add_clock_domains();
  clock->set_name("monotonic");
  clock->set_realtime_minus_domain_ns(identity_.realtime_minus_monotonic_ns);
  clock->set_domain_id(identity_.clock_domain_id);
  hello->set_agent_instance_id(identity_.instance_id);
  // No token: membership is proven by answering the collector's challenge.
  hello->set_agent_version(kTrainscopeVersion);
  hello->set_recording(agent_.recording());
  for (const v1::GpuDevice& gpu : identity_.gpus) *hello->add_gpus() = gpu;
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
  drops.set_buffer_full(queue_.counters().dropped_buffer_full);
  drops.set_shutdown(shutdown);
  return drops;
}

void Sender::Log(const std::string& line) const {
  if (!options_.log_to_stderr) return;
  std::fprintf(stderr, "trainscope-agent [job %s rank %u]: %s\n", options_.job_id.c_str(),
               options_.rank, line.c_str());
}

}  // namespace trainscope::agent
