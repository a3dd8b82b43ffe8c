#include "trainscope/base/notification.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace trainscope::base {
namespace {

TEST(NotificationTest, StartsUnnotifiedAndAWaitTimesOut) {
  Notification n;
  EXPECT_FALSE(n.HasBeenNotified());
  const absl::Time start = absl::Now();
  EXPECT_FALSE(n.WaitForNotificationWithTimeout(absl::Milliseconds(20)));
  // It waited (a lower bound only: a loaded machine may wait longer).
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
  EXPECT_FALSE(n.HasBeenNotified());
}

TEST(NotificationTest, NotifyIsSeenByLaterCallsAtOnce) {
  Notification n;
  n.Notify();
  EXPECT_TRUE(n.HasBeenNotified());
  EXPECT_TRUE(n.WaitForNotificationWithTimeout(absl::ZeroDuration()));
  n.WaitForNotification();  // returns: already notified
}

TEST(NotificationTest, WakesEveryWaiterAndPublishesWhatTheNotifierWrote) {
  Notification n;
  int payload = 0;  // written before Notify, read after the wait: no lock
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      n.WaitForNotification();
      EXPECT_EQ(payload, 42);
      woken.fetch_add(1);
    });
  }
  std::thread timed([&] {
    // Generous: the test only fails if Notify is never seen.
    EXPECT_TRUE(n.WaitForNotificationWithTimeout(absl::Seconds(60)));
    EXPECT_EQ(payload, 42);
    woken.fetch_add(1);
  });
  absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(woken.load(), 0);  // nobody passes before Notify
  payload = 42;
  n.Notify();
  for (std::thread& t : waiters) t.join();
  timed.join();
  EXPECT_EQ(woken.load(), 4);
}

TEST(NotificationDeathTest, NotifyTwiceAborts) {
  Notification n;
  n.Notify();
  EXPECT_DEATH(n.Notify(), "called twice");
}

}  // namespace
}  // namespace trainscope::base
