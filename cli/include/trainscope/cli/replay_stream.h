// One replayed agent stream: an AgentService.Connect call that sends a Hello,
// batches and a Goodbye, with a reader thread that takes the collector's
// acknowledgements and rejections.
//
// Usage (one writer thread):
//   ReplayStream stream(stub, "rank 3");
//   RETURN_IF_ERROR(stream.Open(hello, timeout));       // waits for HelloAck
//   RETURN_IF_ERROR(stream.Send(batch, 64, timeout));   // waits while 64 are unsettled
//   RETURN_IF_ERROR(stream.Close(goodbye, timeout));    // waits for every ack, then Goodbye
//
// A batch is settled once acknowledged (Ack.up_to_sequence) or rejected.
// Threading: Open/Send/Close from one writer thread; Cancel, Stalled and
// counters() from any thread.
#ifndef TRAINSCOPE_CLI_REPLAY_STREAM_H_
#define TRAINSCOPE_CLI_REPLAY_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::cli {

class ReplayStream {
 public:
  struct Counters {
    uint64_t sent = 0;
    uint64_t acked = 0;  // acknowledged and not rejected
    uint64_t rejected = 0;
    uint64_t unsettled = 0;
  };

  ReplayStream(trainscope::v1::AgentService::Stub* stub, std::string label,
               const std::atomic<bool>* stop);
  ~ReplayStream();  // cancels the call if still open and joins the reader

  absl::Status Open(const trainscope::v1::Hello& hello, absl::Duration timeout);
  absl::Status Send(const trainscope::v1::EventBatch& batch, uint64_t max_unsettled,
                    absl::Duration timeout);
  absl::Status Close(const trainscope::v1::Goodbye& goodbye, absl::Duration timeout);
  // Ends the call now; pending and later calls fail.
  void Cancel();

  // Whether batches are unsettled and nothing came from the collector for
  // longer than `limit` (the caller cancels such a stream rather than hang).
  bool Stalled(absl::Time now, absl::Duration limit) const;
  Counters counters() const;
  std::vector<std::string> reject_reasons() const;
  // Set when the collector sent a HaltRequest on this stream.
  std::optional<std::string> halt_reason() const;
  // The token in HelloAck, set only when the collector generated the job's token.
  std::string generated_token() const;
  const std::string& label() const { return label_; }

 private:
  void ReadLoop();
  // Waits until `done` holds, the deadline passes, or stop; true if it holds.
  bool WaitFor(bool (ReplayStream::*done)() const, absl::Duration timeout);
  bool HelloAckedOrEnded() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WindowOpenOrEnded() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AllSettledOrEnded() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Ended() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return read_ended_; }
  absl::Status EndedError();  // the call's final status, once the reader ended
  void AdvanceSettled() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  trainscope::v1::AgentService::Stub* stub_;
  std::string label_;
  const std::atomic<bool>* stop_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<trainscope::v1::AgentMessage, trainscope::v1::Control>>
      call_;
  std::thread reader_;
  bool finished_ = false;  // Finish() called (writer thread only)
  grpc::Status final_status_;

  mutable base::Mutex mu_;
  uint64_t window_target_ ABSL_GUARDED_BY(mu_) = 0;  // WindowOpenOrEnded: unsettled < this
  bool hello_acked_ ABSL_GUARDED_BY(mu_) = false;
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t acked_up_to_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t settled_up_to_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<uint64_t> rejected_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> reject_reasons_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> halt_reason_ ABSL_GUARDED_BY(mu_);
  std::string generated_token_ ABSL_GUARDED_BY(mu_);
  absl::Time last_heard_ ABSL_GUARDED_BY(mu_);
  // Signalled by the reader on every message and when it ends: what WaitFor's
  // conditions read changes there (window_target_ and sent_ change only on
  // the thread that waits).
  base::CondVar changed_;
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_REPLAY_STREAM_H_
