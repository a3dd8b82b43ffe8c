// Loss reports handed to the agent by the training process
// (Agent::SubmitLossReport), waiting for the sender's next batch: bounded in
// bytes, every refusal counted, closed at shutdown.
//
// Usage:
//   LossReportInbox inbox(Agent::kMaxPendingLossReportBytes);
//   inbox.Submit(std::move(report));       // any thread; false: refused (counted)
//   std::vector<v1::LossReport> taken = inbox.Take();   // the sender, per flush
//   inbox.CountDropped(taken.size());      // the sender could not queue them
//   inbox.Close();                         // shutdown: later reports are refused
//
// Threading: thread-safe (one base::Mutex, which ThreadSanitizer sees).
#ifndef TRAINSCOPE_AGENT_SRC_LOSS_REPORT_INBOX_H_
#define TRAINSCOPE_AGENT_SRC_LOSS_REPORT_INBOX_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "trainscope/base/mutex.h"
#include "trainscope/v1/loss.pb.h"

namespace trainscope::agent {

class LossReportInbox {
 public:
  struct Counters {
    uint64_t submitted = 0;  // accepted by Submit
    uint64_t dropped = 0;    // refused by Submit, or counted by the sender
  };

  // `max_pending_bytes`: the serialized reports waiting at once.
  explicit LossReportInbox(uint64_t max_pending_bytes);

  // Keeps `report` for the next Take; false (counted as dropped) when it
  // would pass the bound or the inbox is closed.
  bool Submit(v1::LossReport report);
  // Everything waiting, in submission order; the inbox is empty after.
  std::vector<v1::LossReport> Take();
  // Reports taken but then lost (the sender's memory bound).
  void CountDropped(uint64_t reports);
  void Close();

  Counters counters() const;

 private:
  const uint64_t max_pending_bytes_;
  mutable base::Mutex mu_;
  std::vector<v1::LossReport> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_LOSS_REPORT_INBOX_H_
