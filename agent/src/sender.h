// The agent's background sender: runs the stream to the collector (Hello,
// HelloAck, batches, resends after a reconnect, probes, Goodbye) on its own
// thread, with collaborators doing the rest: RingDrainer turns ring records
// into encoded batches, BatchQueue keeps them until the collector
// acknowledges them, ReconnectPolicy decides when to try again and what to
// tell the user, LossReportInbox holds the training process's loss reports
// until the next batch.
//
// Usage (by Agent):
//   Sender sender(hooks, options, identity, &strings, &rings, std::move(transport));
//   sender.Start();
//   ... sender.counters(); ...
//   sender.Shutdown(absl::Seconds(5));   // from any thread; bounded
//
// Memory: unacknowledged batches are counted by their bytes against
// memory_budget_bytes minus what the rings use. At that bound the sender stops
// draining (the rings fill and producers drop the newest, counted as
// ring_full); a drained batch that still does not fit is discarded and counted
// as buffer_full. Nothing is ever lost uncounted.
//
// Message size: batches are cut to the collector's HelloAck.max_message_bytes
// (BatchQueue), queued ones again after a HelloAck with a smaller limit, so a
// collector with a small --max-message-bytes still gets every event instead of
// cutting the stream at each oversized write. An event that alone exceeds the
// limit is dropped and counted as buffer_full.
//
// Membership (docs/security.md): the Hello carries no secret. A collector of
// protocol 2 answers it with a MembershipChallenge; the sender answers with
// an HMAC of the nonce under the job's secret (security::MembershipProof),
// or, to a collector without a job key (an empty nonce), with the token that
// collector issued in an earlier HelloAck, never a token it was given. A
// collector of protocol 1 that wants the secret in the Hello refuses the
// stream; the refusal is logged with a hint to upgrade the collector.
//
// Threading: one sender thread owns the queue, the encoder and the transport's
// write side. Control messages arrive on the transport's thread (OnControl):
// recording and halt are applied at once through AgentHooks, the rest is posted to
// an inbox (mu_, a base::Mutex: ThreadSanitizer sees it) for the sender thread.
// counters() and job_token() are thread-safe.
#ifndef TRAINSCOPE_AGENT_SRC_SENDER_H_
#define TRAINSCOPE_AGENT_SRC_SENDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "batch_queue.h"
#include "clock_perturbation.h"
#include "loss_report_inbox.h"
#include "reconnect_policy.h"
#include "ring_drainer.h"
#include "ring_registry.h"
#include "string_table.h"
#include "trainscope/agent/agent_options.h"
#include "trainscope/base/mutex.h"
#include "transport.h"

namespace trainscope::agent {

class GpuEventQueue;

class Sender : public ControlListener {
 public:
  // What the sender needs of its Agent: the collector's controls applied, and
  // two readings for Hello and the drop counters. Functions rather than a
  // pointer to Agent (and a friend declaration) so that the sender sees none
  // of Agent's private state. The apply_* ones run on the transport's thread.
  struct AgentHooks {
    std::function<void(bool enabled, uint32_t sampling_period)> apply_recording;
    std::function<void(bool enabled, bool only_if_changed)> apply_loss_contribution;
    std::function<void(HaltInfo info)> apply_halt;
    std::function<bool()> recording;
    std::function<uint64_t()> orphan_drops;  // records of threads past their TLS teardown
  };

  struct Counters {
    uint64_t dropped_buffer_full = 0;
    uint64_t dropped_shutdown_unacked = 0;  // batches still queued at the end (events)
    uint64_t events_refused = 0;
    uint64_t events_acked = 0;
    uint64_t batches_sent = 0;
    uint64_t batches_acked = 0;
    uint64_t reconnects = 0;
    uint64_t loss_reports_submitted = 0;
    uint64_t loss_reports_dropped = 0;
    bool connected = false;
    bool finished = false;  // the sender thread has ended (after Shutdown)
    // The collector's last permanent refusal of the stream (PERMISSION_DENIED,
    // FAILED_PRECONDITION, ...: ReconnectPolicy::IsPermanentRefusal); empty
    // once a stream is acknowledged.
    std::string refusal;
  };

  // What Hello says besides the options.
  struct Identity {
    uint64_t instance_id = 0;
    int64_t realtime_minus_monotonic_ns = 0;
    uint32_t pid = 0;
    ClockPerturbation clock_perturbation;  // TEST ONLY (AgentOptions::test_clock_*)
    std::string clock_domain_id;           // ClockDomainId::Monotonic(); may be empty
    std::vector<v1::GpuDevice> gpus;       // Hello.gpus (gpu/cuda_device_query.h)
  };

  Sender(AgentHooks agent, const AgentOptions& options, Identity identity, StringTable* strings,
         RingRegistry* rings, std::unique_ptr<Transport> transport);
  ~Sender() override;  // Shutdown(0) if still running

  // Device events to send besides the rings' (AgentOptions::gpu_activity);
  // counted with the rings' records. Before Start; the queue outlives the sender.
  void set_gpu_events(GpuEventQueue* queue) {
    gpu_events_ = queue;
    drainer_.set_gpu_events(queue);
  }
  void Start();
  // Flushes until `deadline` from now, then stops. Returns within about the
  // deadline (a blocked stream write is cancelled a little after it).
  // `error` (Goodbye.error): why the process ends abnormally; empty if not.
  void Shutdown(absl::Duration deadline, std::string error = {});

  Counters counters() const;

  // Queues a report for the next batch; false when the pending bound is full
  // or the sender is shutting down (Agent::SubmitLossReport).
  bool SubmitLossReport(v1::LossReport report);
  std::string job_token() const;

  // "trainscope-agent [job J rank R]: line" on stderr, unless log_to_stderr is off.
  void Log(const std::string& line) const;

  // ControlListener (transport thread).
  void OnControl(v1::Control control, int64_t receive_ns) override;
  void OnStreamEnd() override;

 private:
  enum class State { kDisconnected, kAwaitingHelloAck, kStreaming };
  struct Inbound {
    v1::Control control;
    int64_t receive_ns = 0;
    uint64_t epoch = 0;
  };

  void Run();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues one batch carrying the pending loss reports (and no events).
  void DrainLossReports();
  void Drain();
  void ProcessInbox();
  void HandleHelloAck(const v1::HelloAck& ack);
  void HandleChallenge(const v1::MembershipChallenge& challenge);
  void HandleReject(const v1::Reject& reject);
  void HandleProbe(const v1::ProbeRequest& probe, int64_t receive_ns);
  void TryOpen(absl::Time now);
  void LogTooLarge(uint64_t events) const;
  void SendPending();
  // Closes the stream (if any) and schedules the next attempt.
  void Disconnect(absl::string_view why);
  void FinishRun();
  v1::AgentMessage MakeHello() const;
  v1::DropCounters CurrentDrops(uint64_t shutdown) const;
  // The rings' totals plus the GPU event queue's.
  RingRegistry::Totals Totals() const;

  const AgentHooks agent_;
  const AgentOptions& options_;
  const Identity identity_;
  RingRegistry* const rings_;
  GpuEventQueue* gpu_events_ = nullptr;
  const std::unique_ptr<Transport> transport_;
  std::thread thread_;

  // Sender thread only (BatchQueue's counters excepted).
  State state_ = State::kDisconnected;
  // The last stream ended in a permanent refusal and none was acknowledged
  // since: Shutdown stops waiting for acknowledgements that cannot come.
  bool refused_ = false;
  BatchQueue queue_;
  RingDrainer drainer_;
  ReconnectPolicy reconnect_;
  absl::Time next_flush_;
  absl::Time hello_deadline_;
  uint64_t rejects_logged_ = 0;
  bool challenged_ = false;   // the current stream's collector sent a MembershipChallenge
  std::string issued_token_;  // the token a keyless collector generated (HelloAck.job_token)
  bool final_ = false;
  absl::Time final_deadline_;
  std::string final_error_;  // Goodbye.error, copied from shutdown_error_

  LossReportInbox loss_reports_;  // thread-safe
  std::atomic<uint64_t> dropped_shutdown_unacked_{0};
  std::atomic<uint64_t> batches_sent_{0};
  std::atomic<uint64_t> reconnects_{0};
  std::atomic<bool> connected_{false};

  mutable base::Mutex mu_;
  std::vector<Inbound> inbox_ ABSL_GUARDED_BY(mu_);
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // stream number; tags inbox entries
  bool stream_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_seen_ ABSL_GUARDED_BY(mu_) = false;  // by the sender thread
  absl::Time shutdown_deadline_ ABSL_GUARDED_BY(mu_);
  std::string shutdown_error_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::string job_token_ ABSL_GUARDED_BY(mu_);
  std::string refusal_ ABSL_GUARDED_BY(mu_);  // Counters::refusal
  base::CondVar wake_cv_;                     // the sender thread waits on it
  base::CondVar finished_cv_;                 // Shutdown waits on it
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_SENDER_H_
