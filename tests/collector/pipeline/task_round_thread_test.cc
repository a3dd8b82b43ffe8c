#include "trainscope/collector/pipeline/task_round_thread.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "trainscope/base/mutex.h"
#include "trainscope/base/notification.h"

namespace trainscope::collector {
namespace {

constexpr absl::Duration kWait = absl::Seconds(30);

// What the thread did, in order, as seen by its hooks and tasks.
class Journal {
 public:
  void Add(int entry) {
    base::MutexLock lock(&mu_);
    entries_.push_back(entry);
  }
  std::vector<int> entries() {
    base::MutexLock lock(&mu_);
    return entries_;
  }

 private:
  base::Mutex mu_;
  std::vector<int> entries_ ABSL_GUARDED_BY(mu_);
};

constexpr int kEndOfRound = -1000;  // + the round's task count
constexpr int kFinish = -500;

TaskRoundThread::Hooks Recording(Journal* journal) {
  return {
      .end_round =
          [journal](size_t tasks_run) { journal->Add(kEndOfRound + static_cast<int>(tasks_run)); },
      .finish = [journal] { journal->Add(kFinish); }};
}

TEST(TaskRoundThreadTest, ARoundRunsEveryTaskQueuedInOrderThenEndsOnce) {
  Journal journal;
  TaskRoundThread thread;
  thread.Start(Recording(&journal));
  // Hold the thread in a task while three more queue up: they make one round.
  base::Notification holding, release;
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> on_caller{false};
  thread.Post([&](bool run) {
    EXPECT_TRUE(run);
    on_caller = std::this_thread::get_id() == caller;
    journal.Add(0);
    holding.Notify();
    release.WaitForNotificationWithTimeout(kWait);
  });
  ASSERT_TRUE(holding.WaitForNotificationWithTimeout(kWait));
  for (int i = 1; i <= 3; ++i) {
    thread.Post([&journal, i](bool run) {
      if (run) journal.Add(i);
    });
  }
  release.Notify();
  thread.Stop();
  EXPECT_FALSE(on_caller);
  EXPECT_EQ(journal.entries(),
            (std::vector<int>{0, kEndOfRound + 1, 1, 2, 3, kEndOfRound + 3, kFinish}));
}

TEST(TaskRoundThreadTest, ADueTimerMakesARoundOfNoTasks) {
  Journal journal;
  base::Notification woke;
  std::atomic<int> rounds{0};
  TaskRoundThread thread;
  TaskRoundThread::Hooks hooks;
  const absl::Time due = absl::Now() + absl::Milliseconds(20);
  hooks.next_timer = [&] { return rounds.load() == 0 ? due : absl::InfiniteFuture(); };
  hooks.end_round = [&](size_t tasks_run) {
    journal.Add(static_cast<int>(tasks_run));
    if (rounds++ == 0) woke.Notify();
  };
  thread.Start(std::move(hooks));
  ASSERT_TRUE(woke.WaitForNotificationWithTimeout(kWait));
  EXPECT_GE(absl::Now(), due);
  thread.Stop();
  EXPECT_EQ(journal.entries(), std::vector<int>{0});  // one timer round, then none
}

TEST(TaskRoundThreadTest, StopRunsWhatIsQueuedThenRefusesTasks) {
  Journal journal;
  TaskRoundThread thread;
  thread.Start(Recording(&journal));
  base::Notification holding, release;
  thread.Post([&](bool) {
    holding.Notify();
    release.WaitForNotificationWithTimeout(kWait);
  });
  ASSERT_TRUE(holding.WaitForNotificationWithTimeout(kWait));
  thread.Post([&journal](bool run) { journal.Add(run ? 1 : -1); });  // queued before Stop
  std::thread stopper([&] { thread.Stop(); });
  // Once Stop began, a task is refused: TryPost hands it back...
  bool refused = false;
  const absl::Time deadline = absl::Now() + kWait;
  while (!refused && absl::Now() < deadline) {
    TaskRoundThread::Task task = [&journal](bool run) { journal.Add(run ? 2 : -2); };
    refused = !thread.TryPost(task);
    if (refused) {
      ASSERT_TRUE(task);  // still the caller's
    } else {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  ASSERT_TRUE(refused);
  // ... and Post runs it on the caller's thread with run = false.
  thread.Post([&journal](bool run) { journal.Add(run ? 3 : -3); });
  release.Notify();
  stopper.join();
  thread.Stop();  // again: nothing left to do
  const std::vector<int> entries = journal.entries();
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.back(), kFinish);
  int queued_ran = 0, refused_posts = 0;
  for (int entry : entries) {
    queued_ran += entry == 1 ? 1 : 0;  // queued before Stop: ran on the thread
    refused_posts += entry == -3 ? 1 : 0;
    EXPECT_NE(entry, -1);
    EXPECT_NE(entry, -2);  // TryPost never runs a task it refuses
    EXPECT_NE(entry, 3);
  }
  EXPECT_EQ(queued_ran, 1);
  EXPECT_EQ(refused_posts, 1);
}

TEST(TaskRoundThreadTest, TheDestructorStopsAfterTheQueuedTasks) {
  Journal journal;
  {
    TaskRoundThread thread;
    thread.Start(Recording(&journal));
    thread.Post([&journal](bool run) { journal.Add(run ? 1 : -1); });
  }
  const std::vector<int> entries = journal.entries();
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.front(), 1);
  EXPECT_EQ(entries.back(), kFinish);
}

}  // namespace
}  // namespace trainscope::collector
