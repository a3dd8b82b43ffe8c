#include "loss_report_inbox.h"

#include <utility>

namespace trainscope::agent {

LossReportInbox::LossReportInbox(uint64_t max_pending_bytes)
    : max_pending_bytes_(max_pending_bytes) {}

bool LossReportInbox::Submit(v1::LossReport report) {
  const uint64_t bytes = report.ByteSizeLong();  // outside the lock: reports can be large
  base::MutexLock lock(&mu_);
  if (closed_ || pending_bytes_ + bytes > max_pending_bytes_) {
    ++counters_.dropped;
    return false;
  }
  pending_bytes_ += bytes;
  ++counters_.submitted;
  pending_.push_back(std::move(report));
  return true;
}

std::vector<v1::LossReport> LossReportInbox::Take() {
  std::vector<v1::LossReport> taken;
  base::MutexLock lock(&mu_);
  taken.swap(pending_);
  pending_bytes_ = 0;
  return taken;
}

void LossReportInbox::CountDropped(uint64_t reports) {
  base::MutexLock lock(&mu_);
  counters_.dropped += reports;
}

void LossReportInbox::Close() {
  base::MutexLock lock(&mu_);
  closed_ = true;
}

LossReportInbox::Counters LossReportInbox::counters() const {
  base::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace trainscope::agent
