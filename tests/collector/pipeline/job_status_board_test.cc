#include "trainscope/collector/pipeline/job_status_board.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

v1::JobStatus Head(uint64_t feed_sequence, uint64_t events_received) {
  v1::JobStatus head;
  head.mutable_summary()->set_job_id("j");
  head.mutable_summary()->set_events_received(events_received);
  head.set_feed_sequence(feed_sequence);
  return head;
}

v1::RankStatus Row(uint32_t rank, uint64_t events_received) {
  v1::RankStatus row;
  row.set_rank(rank);
  row.set_events_received(events_received);
  return row;
}

TEST(JobStatusBoardTest, IsEmptyBeforeTheFirstPublish) {
  JobStatusBoard board;
  EXPECT_EQ(board.editions(), 0u);
  const v1::JobStatus status = board.Read();
  EXPECT_EQ(status.ranks_size(), 0);
  EXPECT_EQ(status.summary().job_id(), "");
}

TEST(JobStatusBoardTest, ReadsTheHeadWithEveryRankInRankOrder) {
  JobStatusBoard board;
  v1::JobStatus head = Head(7, 30);
  *head.add_ranks() = Row(99, 1);  // a head's own ranks are not the board's
  head.add_commands()->set_command("halt");
  board.Publish(head, {Row(2, 20), Row(0, 10)});
  const v1::JobStatus status = board.Read();
  EXPECT_EQ(status.feed_sequence(), 7u);
  EXPECT_EQ(status.summary().events_received(), 30u);
  ASSERT_EQ(status.commands_size(), 1);
  EXPECT_EQ(status.commands(0).command(), "halt");
  ASSERT_EQ(status.ranks_size(), 2);
  EXPECT_EQ(status.ranks(0).rank(), 0u);
  EXPECT_EQ(status.ranks(1).rank(), 2u);
  EXPECT_EQ(status.ranks(1).events_received(), 20u);
  EXPECT_EQ(board.Summary().events_received(), 30u);
  EXPECT_EQ(board.editions(), 1u);
}

TEST(JobStatusBoardTest, APublishRenewsOnlyTheRowsItCarries) {
  JobStatusBoard board;
  board.Publish(Head(1, 3), {Row(0, 1), Row(1, 2)});
  board.Publish(Head(2, 8), {Row(1, 7)});  // rank 1 changed
  board.Publish(Head(3, 9), {Row(5, 1)});  // a new rank, between none
  board.Publish(Head(4, 9), {});           // only the head changed
  const v1::JobStatus status = board.Read();
  EXPECT_EQ(status.feed_sequence(), 4u);
  ASSERT_EQ(status.ranks_size(), 3);
  EXPECT_EQ(status.ranks(0).events_received(), 1u);  // kept from the first edition
  EXPECT_EQ(status.ranks(1).events_received(), 7u);
  EXPECT_EQ(status.ranks(2).rank(), 5u);
  EXPECT_EQ(board.editions(), 4u);
}

TEST(JobStatusBoardTest, AReaderWhileThePublisherRunsSeesWholeEditionsInOrder) {
  constexpr uint32_t kRanks = 64;
  constexpr uint64_t kEditions = 2000;
  JobStatusBoard board;
  std::vector<v1::RankStatus> all;
  for (uint32_t rank = 0; rank < kRanks; ++rank) all.push_back(Row(rank, 0));
  board.Publish(Head(0, 0), all);

  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> torn{0};
  std::atomic<uint64_t> backwards{0};
  std::thread reader([&] {
    uint64_t last_sequence = 0;
    // Reads on until the publisher is done, and at least a few times.
    while (!done.load() || reads.load() < 10) {
      const v1::JobStatus status = board.Read();
      uint64_t sum = 0;
      for (const v1::RankStatus& row : status.ranks()) sum += row.events_received();
      // Every edition's rows add up to its summary: a torn read (rows of one
      // edition, head of another) would not.
      if (sum != status.summary().events_received() || status.ranks_size() != kRanks) ++torn;
      if (status.feed_sequence() < last_sequence) ++backwards;
      last_sequence = status.feed_sequence();
      if (board.Summary().events_received() < status.summary().events_received()) ++backwards;
      ++reads;
    }
  });
  // Each edition gives one rank one more event and counts it in the head.
  std::vector<uint64_t> events(kRanks, 0);
  uint64_t total = 0;
  for (uint64_t edition = 1; edition <= kEditions; ++edition) {
    const uint32_t rank = static_cast<uint32_t>(edition % kRanks);
    ++events[rank];
    ++total;
    board.Publish(Head(edition, total), {Row(rank, events[rank])});
  }
  done.store(true);
  reader.join();
  EXPECT_GE(reads.load(), 10u);
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(backwards.load(), 0u);
  const v1::JobStatus last = board.Read();
  EXPECT_EQ(last.feed_sequence(), kEditions);
  EXPECT_EQ(last.summary().events_received(), kEditions);
  EXPECT_EQ(board.editions(), kEditions + 1);
}

}  // namespace
}  // namespace trainscope::collector
