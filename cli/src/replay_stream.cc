#include "trainscope/cli/replay_stream.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "trainscope/client/commands_client.h"

namespace trainscope::cli {
namespace {

constexpr absl::Duration kStopCheckInterval = absl::Milliseconds(100);
constexpr size_t kMaxRejectReasons = 20;

}  // namespace

ReplayStream::ReplayStream(trainscope::v1::AgentService::Stub* stub, std::string label,
                           const std::atomic<bool>* stop)
    : stub_(stub), label_(std::move(label)), stop_(stop) {}

ReplayStream::~ReplayStream() {
  if (call_ == nullptr) return;
  Cancel();
  if (reader_.joinable()) reader_.join();
  if (!finished_) call_->Finish();
}

void ReplayStream::Cancel() { context_.TryCancel(); }

bool ReplayStream::HelloAckedOrEnded() const { return hello_acked_ || read_ended_; }

bool ReplayStream::WindowOpenOrEnded() const {
  const uint64_t rejected_ahead =
      static_cast<uint64_t>(std::distance(rejected_.upper_bound(settled_up_to_), rejected_.end()));
  return read_ended_ || sent_ - settled_up_to_ - rejected_ahead < window_target_;
}

bool ReplayStream::AllSettledOrEnded() const { return read_ended_ || settled_up_to_ >= sent_; }

void ReplayStream::AdvanceSettled() {
  settled_up_to_ = std::max(settled_up_to_, std::min(acked_up_to_, sent_));
  while (rejected_.count(settled_up_to_ + 1) != 0) ++settled_up_to_;
}

bool ReplayStream::WaitFor(bool (ReplayStream::*done)() const, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  base::MutexLock lock(&mu_);
  while (true) {
    if ((this->*done)()) return true;
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    changed_.WaitWithTimeout(&mu_, std::min(left, kStopCheckInterval));
  }
}

absl::Status ReplayStream::EndedError() {
  if (reader_.joinable()) reader_.join();
  if (!finished_) {
    final_status_ = call_->Finish();
    finished_ = true;
  }
  if (final_status_.ok()) {
    return absl::AbortedError(absl::StrCat(label_, ": the collector ended the stream early"));
  }
  absl::Status status = client::FromGrpcStatus(final_status_);
  return absl::Status(status.code(), absl::StrCat(label_, ": ", status.message()));
}

void ReplayStream::ReadLoop() {
  trainscope::v1::Control control;
  while (call_->Read(&control)) {
    base::MutexLock lock(&mu_);
    last_heard_ = absl::Now();
    switch (control.body_case()) {
      case trainscope::v1::Control::kHelloAck:
        hello_acked_ = true;
        generated_token_ = control.hello_ack().job_token();
        break;
      case trainscope::v1::Control::kAck:
        acked_up_to_ = std::max(acked_up_to_, control.ack().up_to_sequence());
        AdvanceSettled();
        break;
      case trainscope::v1::Control::kReject:
        rejected_.insert(control.reject().sequence());
        if (reject_reasons_.size() < kMaxRejectReasons) {
          reject_reasons_.push_back(
              absl::StrCat("batch ", control.reject().sequence(), ": ", control.reject().reason()));
        }
        AdvanceSettled();
        break;
      case trainscope::v1::Control::kHalt:
        halt_reason_ = control.halt().reason();
        break;
      default:
        break;  // recording switches and clock probes mean nothing to a replay
    }
    changed_.SignalAll();
  }
  base::MutexLock lock(&mu_);
  read_ended_ = true;
  changed_.SignalAll();
}

absl::Status ReplayStream::Open(const trainscope::v1::Hello& hello, absl::Duration timeout) {
  {
    base::MutexLock lock(&mu_);
    last_heard_ = absl::Now();
  }
  call_ = stub_->Connect(&context_);
  reader_ = std::thread([this] { ReadLoop(); });
  trainscope::v1::AgentMessage message;
  *message.mutable_hello() = hello;
  call_->Write(message);  // a failed write shows as the reader ending
  if (!WaitFor(&ReplayStream::HelloAckedOrEnded, timeout)) {
    Cancel();
    if (stop_ != nullptr && stop_->load()) return absl::CancelledError("interrupted");
    return absl::DeadlineExceededError(
        absl::StrCat(label_, ": no answer to Hello within ", absl::FormatDuration(timeout)));
  }
  {
    base::MutexLock lock(&mu_);
    if (hello_acked_) return absl::OkStatus();
  }
  return EndedError();
}

absl::Status ReplayStream::Send(const trainscope::v1::EventBatch& batch, uint64_t max_unsettled,
                                absl::Duration timeout) {
  {
    base::MutexLock lock(&mu_);
    window_target_ = std::max<uint64_t>(1, max_unsettled);
  }
  if (!WaitFor(&ReplayStream::WindowOpenOrEnded, timeout)) {
    if (stop_ != nullptr && stop_->load()) return absl::CancelledError("interrupted");
    return absl::DeadlineExceededError(absl::StrCat(
        label_, ": no acknowledgement from the collector for ", absl::FormatDuration(timeout)));
  }
  bool ended;
  {
    base::MutexLock lock(&mu_);
    ended = read_ended_;
    if (!ended) ++sent_;
  }
  if (ended) return EndedError();
  trainscope::v1::AgentMessage message;
  *message.mutable_batch() = batch;
  if (!call_->Write(message)) {
    Cancel();
    return EndedError();
  }
  return absl::OkStatus();
}

absl::Status ReplayStream::Close(const trainscope::v1::Goodbye& goodbye, absl::Duration timeout) {
  const bool settled = WaitFor(&ReplayStream::AllSettledOrEnded, timeout);
  bool ended;
  {
    base::MutexLock lock(&mu_);
    ended = read_ended_;
  }
  if (ended) return EndedError();
  if (!settled) {
    Cancel();
    if (stop_ != nullptr && stop_->load()) return absl::CancelledError("interrupted");
    Counters now = counters();
    return absl::DeadlineExceededError(absl::StrCat(label_, ": ", now.unsettled,
                                                    " batches still unacknowledged after ",
                                                    absl::FormatDuration(timeout)));
  }
  trainscope::v1::AgentMessage message;
  *message.mutable_goodbye() = goodbye;
  call_->Write(message);
  call_->WritesDone();
  if (!WaitFor(&ReplayStream::Ended, timeout)) Cancel();  // the collector kept the call open
  absl::Status status = EndedError();
  // After a goodbye the collector may end the call with OK or CANCELLED (we
  // cancelled a call it kept open): both are a clean end.
  if (absl::IsAborted(status) || absl::IsCancelled(status)) return absl::OkStatus();
  return status;
}

bool ReplayStream::Stalled(absl::Time now, absl::Duration limit) const {
  base::MutexLock lock(&mu_);
  if (read_ended_) return false;
  const bool waiting = !hello_acked_ || sent_ > settled_up_to_;
  return waiting && now - last_heard_ > limit;
}

ReplayStream::Counters ReplayStream::counters() const {
  base::MutexLock lock(&mu_);
  Counters counters;
  counters.sent = sent_;
  counters.rejected = rejected_.size();
  const uint64_t rejected_settled = static_cast<uint64_t>(
      std::distance(rejected_.begin(), rejected_.upper_bound(settled_up_to_)));
  counters.acked = settled_up_to_ - rejected_settled;
  counters.unsettled = sent_ - settled_up_to_ - (counters.rejected - rejected_settled);
  return counters;
}

std::vector<std::string> ReplayStream::reject_reasons() const {
  base::MutexLock lock(&mu_);
  return reject_reasons_;
}

std::optional<std::string> ReplayStream::halt_reason() const {
  base::MutexLock lock(&mu_);
  return halt_reason_;
}

std::string ReplayStream::generated_token() const {
  base::MutexLock lock(&mu_);
  return generated_token_;
}

}  // namespace trainscope::cli
