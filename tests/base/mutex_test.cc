#include "trainscope/base/mutex.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace trainscope::base {
namespace {

struct Counter {
  Mutex mu;
  CondVar changed;
  int value ABSL_GUARDED_BY(mu) = 0;
};

TEST(MutexTest, MutexLockSerialisesWriters) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < 10'000; ++i) {
        MutexLock lock(&counter.mu);
        ++counter.value;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MutexLock lock(&counter.mu);
  EXPECT_EQ(counter.value, 40'000);
}

TEST(MutexTest, SignalAllWakesAWaiterBeforeItsDeadline) {
  Counter counter;
  std::thread producer([&counter] {
    absl::SleepFor(absl::Milliseconds(20));
    MutexLock lock(&counter.mu);
    counter.value = 1;
    counter.changed.SignalAll();
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  {
    MutexLock lock(&counter.mu);
    bool timed_out = false;
    while (counter.value == 0 && !timed_out) {
      timed_out = counter.changed.WaitWithDeadline(&counter.mu, deadline);
    }
    EXPECT_FALSE(timed_out);
    EXPECT_EQ(counter.value, 1);
  }
  EXPECT_LT(absl::Now(), deadline);
  producer.join();
}

TEST(MutexTest, WaitsReturnTrueOnceTheirDeadlinePassed) {
  Counter counter;
  MutexLock lock(&counter.mu);
  EXPECT_TRUE(counter.changed.WaitWithDeadline(&counter.mu, absl::Now() - absl::Seconds(1)));
  const absl::Time start = absl::Now();
  // A spurious wakeup returns false: wait again.
  while (!counter.changed.WaitWithTimeout(&counter.mu, absl::Milliseconds(10))) {
  }
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(10));
}

}  // namespace
}  // namespace trainscope::base
