// The project's one mutex type (with MutexLock and CondVar): a std::mutex with
// absl::Mutex's interface and thread-safety annotations, so that clang's
// -Wthread-safety (the thread-safety preset, run in CI) checks every
// ABSL_GUARDED_BY and ABSL_EXCLUSIVE_LOCKS_REQUIRED against the locks held.
//
// Why not absl::Mutex: Debian's Abseil is not built with ThreadSanitizer, so
// TSan cannot see an absl::Mutex lock and reports every access it guards as a
// race, while it does see std::mutex (pthread); one type for the agent (tested
// under TSan), the collector, CLI, tier and viewer keeps one set of rules. The
// rule that differs from absl: there is no Await(Condition), which re-evaluated
// its condition at every unlock. A waiter loops on the state with a CondVar,
// and every change of state that a waiter waits on must Signal or SignalAll.
//
// Usage:
//   base::Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_) = 0;
//   base::CondVar changed_;
//   { base::MutexLock lock(&mu_); ++count_; changed_.SignalAll(); }
//   base::MutexLock lock(&mu_);
//   while (count_ == 0) {
//     if (changed_.WaitWithDeadline(&mu_, deadline)) break;  // true: timed out
//   }
//
// Threading: Mutex and CondVar are thread-safe (that is their point); a
// MutexLock belongs to the thread that made it.
#ifndef TRAINSCOPE_BASE_MUTEX_H_
#define TRAINSCOPE_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace trainscope::base {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits release the mutex, block, and hold it again when they return, as
// absl::CondVar's do. Wakeups may be spurious: wait in a loop on the state.
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's lock owns it
  }
  // True when `deadline` passed before a signal came.
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (deadline == absl::InfiniteFuture()) {
      Wait(mu);
      return false;
    }
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const std::cv_status status =
        cv_.wait_for(lock, absl::ToChronoNanoseconds(deadline - absl::Now()));
    lock.release();
    return status == std::cv_status::timeout;
  }
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitWithDeadline(mu, absl::Now() + timeout);
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace trainscope::base

#endif  // TRAINSCOPE_BASE_MUTEX_H_
