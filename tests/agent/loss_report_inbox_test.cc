#include "loss_report_inbox.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

v1::LossReport Report(uint64_t iteration, size_t layer_bytes = 0) {
  v1::LossReport report;
  report.set_iteration(iteration);
  report.set_selection_layer(std::string(layer_bytes, 'l'));
  return report;
}

TEST(LossReportInboxTest, TakeReturnsReportsInOrderAndEmptiesTheInbox) {
  LossReportInbox inbox(1 << 20);
  EXPECT_TRUE(inbox.Submit(Report(1)));
  EXPECT_TRUE(inbox.Submit(Report(2)));
  std::vector<v1::LossReport> taken = inbox.Take();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].iteration(), 1u);
  EXPECT_EQ(taken[1].iteration(), 2u);
  EXPECT_TRUE(inbox.Take().empty());
  EXPECT_EQ(inbox.counters().submitted, 2u);
  EXPECT_EQ(inbox.counters().dropped, 0u);
}

TEST(LossReportInboxTest, TheByteBoundRefusesAndCountsUntilTheSenderTakes) {
  const v1::LossReport big = Report(1, 600);
  LossReportInbox inbox(big.ByteSizeLong() * 2);
  EXPECT_TRUE(inbox.Submit(big));
  EXPECT_TRUE(inbox.Submit(big));
  EXPECT_FALSE(inbox.Submit(big));  // a third would pass the bound
  EXPECT_EQ(inbox.counters().dropped, 1u);
  EXPECT_EQ(inbox.Take().size(), 2u);
  EXPECT_TRUE(inbox.Submit(big));  // room again
  inbox.CountDropped(1);           // the sender lost it to its memory bound
  EXPECT_EQ(inbox.counters().submitted, 3u);
  EXPECT_EQ(inbox.counters().dropped, 2u);
}

TEST(LossReportInboxTest, AClosedInboxRefusesEverything) {
  LossReportInbox inbox(1 << 20);
  EXPECT_TRUE(inbox.Submit(Report(1)));
  inbox.Close();
  EXPECT_FALSE(inbox.Submit(Report(2)));
  EXPECT_EQ(inbox.Take().size(), 1u);  // what came before still goes
  EXPECT_EQ(inbox.counters().dropped, 1u);
}

// Submitters on several threads and a taker: every report is taken or
// counted, none twice (ThreadSanitizer checks the locking).
TEST(LossReportInboxTest, ConcurrentSubmitsAreEachTakenOnce) {
  LossReportInbox inbox(1 << 20);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&inbox, t] {
      for (int i = 0; i < kPerThread; ++i) inbox.Submit(Report(t * kPerThread + i));
    });
  }
  std::vector<int> seen(kThreads * kPerThread, 0);
  size_t taken = 0;
  const auto take = [&] {
    for (const v1::LossReport& report : inbox.Take()) {
      ++seen[report.iteration()];
      ++taken;
    }
  };
  while (taken < seen.size()) {
    take();
    if (inbox.counters().submitted + inbox.counters().dropped == seen.size()) {
      take();
      break;
    }
  }
  for (std::thread& thread : threads) thread.join();
  take();
  const LossReportInbox::Counters c = inbox.counters();
  EXPECT_EQ(c.submitted + c.dropped, seen.size());
  EXPECT_EQ(taken, c.submitted);
  for (int count : seen) EXPECT_LE(count, 1);
}

}  // namespace
}  // namespace trainscope::agent
