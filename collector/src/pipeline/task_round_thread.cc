#include "trainscope/collector/pipeline/task_round_thread.h"

#include <utility>

namespace trainscope::collector {

TaskRoundThread::~TaskRoundThread() { Stop(); }

void TaskRoundThread::Start(Hooks hooks) {
  hooks_ = std::move(hooks);
  thread_ = std::thread([this] { Run(); });
}

void TaskRoundThread::Post(Task task) {
  if (!TryPost(task)) task(false);
}

bool TaskRoundThread::TryPost(Task& task) {
  base::MutexLock lock(&mu_);
  if (stopping_) return false;
  tasks_.push_back(std::move(task));
  work_.Signal();
  return true;
}

void TaskRoundThread::Stop() {
  base::MutexLock stop_lock(&stop_mu_);
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    work_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void TaskRoundThread::Run() {
  while (true) {
    std::deque<Task> tasks;
    bool stopped = false;
    // Asked outside mu_: the hook reads its owner's state, never this lock's.
    const absl::Time next_timer = hooks_.next_timer();
    {
      base::MutexLock lock(&mu_);
      while (tasks_.empty() && !stopping_) {
        if (work_.WaitWithDeadline(&mu_, next_timer)) break;  // a timer is due
      }
      tasks.swap(tasks_);
      // The tasks queued before Stop still run, in a round of their own.
      stopped = stopping_ && tasks.empty();
    }
    if (stopped) break;
    for (Task& task : tasks) task(true);
    hooks_.end_round(tasks.size());
  }
  hooks_.finish();
}

}  // namespace trainscope::collector
