// A Transport for agent tests: plays the collector's part in memory.
//
// Usage:
//   auto collector = std::make_shared<FakeCollector>();
//   auto agent = Agent::StartWithTransport(options, std::make_unique<FakeTransport>(collector));
//   collector->Send(control);            // as if the collector sent it
//   collector->Messages();               // everything the agent wrote
//
// By default it answers Hello with a HelloAck (recording as the Hello says)
// and acknowledges every batch at once, from inside Write (the sender thread).
//
// Threading: all members are guarded by mu; callable from any thread.
#ifndef TRAINSCOPE_TESTS_AGENT_FAKE_TRANSPORT_H_
#define TRAINSCOPE_TESTS_AGENT_FAKE_TRANSPORT_H_

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "trainscope/agent/agent.h"
#include "trainscope/base/mutex.h"
#include "transport.h"

namespace trainscope::agent {

struct FakeCollector {
  base::Mutex mu;
  bool ready ABSL_GUARDED_BY(mu) = true;
  bool answer_hello ABSL_GUARDED_BY(mu) = true;
  bool auto_ack ABSL_GUARDED_BY(mu) = true;
  uint64_t resume_after ABSL_GUARDED_BY(mu) = 0;
  std::set<uint64_t> reject ABSL_GUARDED_BY(mu);  // batch sequences to refuse
  int opens ABSL_GUARDED_BY(mu) = 0;
  bool broken ABSL_GUARDED_BY(mu) = false;  // writes fail until the next Open
  // HelloAck.max_message_bytes (0: unset); a larger message cuts the stream,
  // as gRPC's receive limit does, and is counted.
  uint64_t max_message_bytes ABSL_GUARDED_BY(mu) = 0;
  int oversized ABSL_GUARDED_BY(mu) = 0;
  // Not OK: a Hello is answered by ending the stream with this status (what
  // Close returns), as the collector refuses a rank.
  absl::Status refuse_hello ABSL_GUARDED_BY(mu);
  bool refused_stream ABSL_GUARDED_BY(mu) = false;
  // Set: a Hello is answered with a MembershipChallenge carrying this nonce
  // (empty: a collector without a job key), the MembershipProof with the
  // HelloAck (carrying ack_token), as a protocol-2 collector does.
  std::optional<std::string> challenge_nonce ABSL_GUARDED_BY(mu);
  std::string ack_token ABSL_GUARDED_BY(mu);
  v1::Hello last_hello ABSL_GUARDED_BY(mu);  // of the current stream
  ControlListener* listener ABSL_GUARDED_BY(mu) = nullptr;
  std::vector<v1::AgentMessage> written ABSL_GUARDED_BY(mu);

  // Delivers `control` as if read from the stream. False when no stream is open.
  bool Send(const v1::Control& control) { return SendAt(control, Agent::Now()); }
  // Like Send, with the agent-side receive time the transport would stamp.
  bool SendAt(const v1::Control& control, int64_t receive_ns) {
    base::MutexLock lock(&mu);
    if (listener == nullptr) return false;
    listener->OnControl(control, receive_ns);
    return true;
  }
  // Ends the stream from the collector's side.
  void Break() {
    base::MutexLock lock(&mu);
    broken = true;
    if (listener != nullptr) listener->OnStreamEnd();
  }
  std::vector<v1::AgentMessage> Messages() {
    base::MutexLock lock(&mu);
    return written;
  }
  std::vector<v1::EventBatch> Batches() {
    std::vector<v1::EventBatch> batches;
    for (const auto& message : Messages()) {
      if (message.has_batch()) batches.push_back(message.batch());
    }
    return batches;
  }
};

class FakeTransport : public Transport {
 public:
  explicit FakeTransport(std::shared_ptr<FakeCollector> collector)
      : collector_(std::move(collector)) {}

  bool ReadyToOpen(absl::Duration) override {
    base::MutexLock lock(&collector_->mu);
    return collector_->ready;
  }
  absl::Status Open(ControlListener* listener) override {
    base::MutexLock lock(&collector_->mu);
    collector_->listener = listener;
    collector_->broken = false;
    collector_->refused_stream = false;
    ++collector_->opens;
    return absl::OkStatus();
  }
  bool Write(const v1::AgentMessage& message) override {
    base::MutexLock lock(&collector_->mu);
    if (collector_->broken || collector_->listener == nullptr) return false;
    if (collector_->max_message_bytes > 0 &&
        message.ByteSizeLong() > collector_->max_message_bytes) {
      ++collector_->oversized;
      collector_->broken = true;
      collector_->listener->OnStreamEnd();
      return false;
    }
    collector_->written.push_back(message);
    if (message.has_hello()) collector_->last_hello = message.hello();
    if (message.has_hello() && !collector_->refuse_hello.ok()) {
      collector_->refused_stream = true;
      collector_->broken = true;
      collector_->listener->OnStreamEnd();
      return true;
    }
    v1::Control reply;
    if (message.has_hello() && collector_->answer_hello && collector_->challenge_nonce) {
      reply.mutable_membership_challenge()->set_nonce(*collector_->challenge_nonce);
    } else if ((message.has_hello() && collector_->answer_hello) ||
               message.has_membership_proof()) {
      reply.mutable_hello_ack()->set_job_token(collector_->ack_token);
      reply.mutable_hello_ack()->set_resume_after_sequence(collector_->resume_after);
      reply.mutable_hello_ack()->set_recording(collector_->last_hello.recording());
      reply.mutable_hello_ack()->set_max_message_bytes(collector_->max_message_bytes);
    } else if (message.has_batch()) {
      const uint64_t sequence = message.batch().sequence();
      if (collector_->reject.count(sequence) != 0) {
        reply.mutable_reject()->set_sequence(sequence);
        reply.mutable_reject()->set_reason("EventBatch.kind: test refusal");
      } else if (collector_->auto_ack) {
        reply.mutable_ack()->set_up_to_sequence(sequence);
      }
    }
    if (reply.body_case() != v1::Control::BODY_NOT_SET) {
      collector_->listener->OnControl(reply, Agent::Now());
    }
    return true;
  }
  absl::Status Close(absl::Duration) override {
    base::MutexLock lock(&collector_->mu);
    collector_->listener = nullptr;
    return collector_->refused_stream ? collector_->refuse_hello : absl::OkStatus();
  }
  void Cancel() override {}

 private:
  std::shared_ptr<FakeCollector> collector_;
};

// Polls `done` until it holds or 10 s pass (a wait with a deadline, not a timing assertion).
inline bool WaitFor(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_TESTS_AGENT_FAKE_TRANSPORT_H_
