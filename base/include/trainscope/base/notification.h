// A one-shot event on base::Mutex and CondVar: one thread calls Notify once,
// any number wait for it. The subset of absl::Notification's interface this
// project uses, so that ThreadSanitizer sees its synchronisation (Debian's
// absl::Notification is built on Abseil's uninstrumented mutex; see mutex.h).
//
// Usage:
//   base::Notification done;
//   std::thread worker([&] { Work(); done.Notify(); });
//   if (!done.WaitForNotificationWithTimeout(absl::Seconds(5))) { ... timed out }
//
// Threading: every method is thread-safe. Notify may be called once (a second
// call aborts, as absl's does: it would mean two owners think they finish the
// event); what the notifier wrote before Notify is visible to a waiter after
// its wait returns true.
#ifndef TRAINSCOPE_BASE_NOTIFICATION_H_
#define TRAINSCOPE_BASE_NOTIFICATION_H_

#include <cstdio>
#include <cstdlib>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"

namespace trainscope::base {

class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  void Notify() {
    MutexLock lock(&mu_);
    if (notified_) {
      std::fputs("base::Notification::Notify called twice\n", stderr);
      std::abort();
    }
    notified_ = true;
    notified_changed_.SignalAll();
  }

  bool HasBeenNotified() const {
    MutexLock lock(&mu_);
    return notified_;
  }

  void WaitForNotification() const {
    MutexLock lock(&mu_);
    while (!notified_) notified_changed_.Wait(&mu_);
  }

  // True when notified before `timeout` passed (at once if already notified).
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock lock(&mu_);
    while (!notified_) {
      if (notified_changed_.WaitWithDeadline(&mu_, deadline)) return notified_;
    }
    return true;
  }

 private:
  // Waits are const, as absl's are: waiting does not change the event.
  mutable Mutex mu_;
  mutable CondVar notified_changed_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainscope::base

#endif  // TRAINSCOPE_BASE_NOTIFICATION_H_
