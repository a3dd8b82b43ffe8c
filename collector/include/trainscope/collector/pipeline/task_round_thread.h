// A thread that runs posted tasks one at a time, in the order posted, in
// rounds: it takes every task queued, runs them, then calls end_round (a job
// pipeline commits the round as a group there and runs its timers). Between
// rounds it sleeps until a task is posted or next_timer is due; a due timer
// makes a round of no tasks.
//
// Usage:
//   TaskRoundThread thread;
//   thread.Start({.next_timer = [&] { return schedule.Next(); },
//                 .end_round = [&](size_t tasks_run) { CommitAndRunTimers(); },
//                 .finish = [&] { FlushLastRows(); }});
//   thread.Post([](bool run) { if (run) DoWork(); else FailCaller(); });
//   thread.Stop();  // runs what is queued (and its end_round), then finish; joins
//
// A task posted once Stop began is not run on the thread: Post runs it at
// once on the caller's thread with `run` false (to fail its caller), TryPost
// hands it back.
//
// Threading: Post, TryPost and Stop are thread-safe; the hooks and the tasks
// run on the thread (next_timer before each wait, never under a lock a
// caller can hold).
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_TASK_ROUND_THREAD_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_TASK_ROUND_THREAD_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"

namespace trainscope::collector {

class TaskRoundThread {
 public:
  using Task = std::function<void(bool run)>;
  struct Hooks {
    // When the next timer is due; absl::InfiniteFuture(): none.
    std::function<absl::Time()> next_timer = [] { return absl::InfiniteFuture(); };
    // After each round; `tasks_run`: 0 for a round a timer woke.
    std::function<void(size_t tasks_run)> end_round = [](size_t) {};
    // Once, after the last round, as Stop ends the thread.
    std::function<void()> finish = [] {};
  };

  TaskRoundThread() = default;
  ~TaskRoundThread();  // Stop()

  TaskRoundThread(const TaskRoundThread&) = delete;
  TaskRoundThread& operator=(const TaskRoundThread&) = delete;

  // Starts the thread; once.
  void Start(Hooks hooks);

  // Queues `task`; once stopping, runs task(false) on the caller's thread.
  void Post(Task task);
  // Queues `task` and returns true; once stopping, returns false and leaves
  // `task` to the caller.
  bool TryPost(Task& task);

  // Refuses new tasks, runs those queued in a last round, calls finish and
  // joins. Idempotent; waits for a Stop under way on another thread.
  void Stop();

 private:
  void Run();

  Hooks hooks_;  // set before the thread starts, then the thread's
  base::Mutex mu_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  base::CondVar work_;  // signalled when a task is queued or stopping_ set

  base::Mutex stop_mu_;  // serialises Stop callers around the join
  std::thread thread_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_TASK_ROUND_THREAD_H_
