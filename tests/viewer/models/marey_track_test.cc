#include "trainscope/viewer/marey_track.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace trainscope::viewer {
namespace {

MareyTrack::Op Op(int64_t start, int64_t end, OpClass cls = OpClass::kCompute,
                  int32_t raw_delta = 0) {
  MareyTrack::Op op;
  op.start = start;
  op.end = end;
  op.cls = cls;
  op.raw_delta = raw_delta;
  return op;
}

TEST(MareyTrackTest, PrepareSortsEachClassByStartAndSumsBusyTime) {
  MareyTrack track;
  track.Push(Op(300, 350));
  track.Push(Op(100, 180));
  track.Push(Op(200, 205, OpClass::kCollective));
  track.Push(Op(150, 400, OpClass::kSend));
  track.Prepare();
  ASSERT_EQ(track.compute.size(), 2u);
  ASSERT_EQ(track.comm.size(), 2u);
  EXPECT_EQ(track.compute[0].start, 100);
  EXPECT_EQ(track.compute[1].start, 300);
  EXPECT_EQ(track.comm[0].cls, OpClass::kSend);
  EXPECT_EQ(track.busy_prefix, (std::vector<int64_t>{0, 80, 130}));
  EXPECT_EQ(track.max_compute, 80);
  EXPECT_EQ(track.max_comm, 250);
  ASSERT_EQ(track.comm_spans.size(), 2u);
  EXPECT_EQ(track.comm_spans[1].start, 200);
  EXPECT_EQ(track.comm_spans[1].duration, 5);
  EXPECT_FALSE(track.dirty);
}

TEST(MareyTrackTest, FewOperatorsHaveNoCoarseIndexManyDo) {
  MareyTrack few;
  few.Push(Op(0, 10));
  few.Prepare();
  EXPECT_EQ(few.fine_ns, 0);

  MareyTrack many;
  for (int64_t i = 0; i < 4096; ++i) many.Push(Op(i * 100, i * 100 + 40));
  many.Prepare();
  ASSERT_GT(many.fine_ns, 0);
  // The entry nearest to a time counts the operators starting before it.
  const MareyTrack::FineEdge& edge = many.FineAt(100'000);
  EXPECT_NEAR(static_cast<double>(edge.index), 1000.0, 8.0);
  EXPECT_EQ(edge.busy, many.busy_prefix[edge.index]);
  EXPECT_EQ(edge.next_start, many.compute[edge.index].start);
}

// A live job appends its newest step: Prepare extends the indexes, and they
// must equal those built from scratch over the same operators.
TEST(MareyTrackTest, AppendingInTimeOrderExtendsTheIndexesAsARebuildWould) {
  MareyTrack live, scratch;
  auto push = [&](int64_t i) {
    const OpClass cls = i % 10 == 9 ? OpClass::kCollective : OpClass::kCompute;
    const MareyTrack::Op op = Op(i * 100, i * 100 + 40 + i % 7, cls, static_cast<int32_t>(i % 5));
    live.Push(op);
    scratch.Push(op);
  };
  for (int64_t i = 0; i < 5000; ++i) push(i);
  live.Prepare();
  for (int64_t step = 0; step < 30; ++step) {
    for (int64_t i = 5000 + step * 97; i < 5000 + (step + 1) * 97; ++i) push(i);
    live.Prepare();
  }
  scratch.Prepare();
  ASSERT_EQ(live.compute.size(), scratch.compute.size());
  EXPECT_EQ(live.busy_prefix, scratch.busy_prefix);
  EXPECT_EQ(live.comm_busy_prefix, scratch.comm_busy_prefix);
  EXPECT_EQ(live.max_compute, scratch.max_compute);
  EXPECT_EQ(live.max_comm, scratch.max_comm);
  EXPECT_EQ(live.block_start, scratch.block_start);
  EXPECT_EQ(live.block_end, scratch.block_end);
  EXPECT_EQ(live.block_raw_low, scratch.block_raw_low);
  EXPECT_EQ(live.block_raw_high, scratch.block_raw_high);
  ASSERT_EQ(live.comm_spans.size(), scratch.comm_spans.size());
  EXPECT_EQ(live.comm_spans.back().start, scratch.comm_spans.back().start);
  // The coarse index keeps its grid, so compare what a frame reads from it.
  ASSERT_GT(live.fine_ns, 0);
  for (int64_t t = 0; t < 780'000; t += 1234) {
    const MareyTrack::FineEdge& a = live.FineAt(t);
    const int64_t grid =
        live.fine_origin + (t - live.fine_origin + live.fine_ns / 2) / live.fine_ns * live.fine_ns;
    const size_t expected = static_cast<size_t>(
        std::partition_point(scratch.compute.begin(), scratch.compute.end(),
                             [&](const MareyTrack::Op& op) { return op.start < grid; }) -
        scratch.compute.begin());
    ASSERT_EQ(a.index, expected) << "at " << t;
    EXPECT_EQ(a.busy, scratch.busy_prefix[expected]);
    EXPECT_EQ(a.next_start,
              expected < scratch.compute.size() ? scratch.compute[expected].start : INT64_MAX);
  }
  // Out of order: rebuilt, sorted.
  live.Push(Op(50, 60));
  live.Prepare();
  EXPECT_TRUE(std::is_sorted(
      live.compute.begin(), live.compute.end(),
      [](const MareyTrack::Op& a, const MareyTrack::Op& b) { return a.start < b.start; }));
  EXPECT_EQ(live.busy_prefix.back(), scratch.busy_prefix.back() + 10);
}

TEST(MareyTrackTest, CommunicationBlocksCoverTheirOperators) {
  MareyTrack track;
  for (int64_t i = 0; i < 70; ++i) {
    track.Push(Op(i * 10, i * 10 + 5, OpClass::kCollective, static_cast<int32_t>(i % 3)));
  }
  track.Prepare();
  ASSERT_EQ(track.block_start.size(), 70 / MareyTrack::kBlock);
  EXPECT_EQ(track.block_start[0], 0);
  EXPECT_EQ(track.block_end[0], 315);
  EXPECT_EQ(track.block_raw_low[1], 0);
  EXPECT_EQ(track.block_raw_high[1], 2);
  EXPECT_EQ(track.block_class[1], OpClass::kCollective);
}

TEST(MareyTrackTest, TheRawClockAddsTheDevicesOffset) {
  MareyTrack track;
  track.raw_base = 1000;
  const MareyTrack::Op op = Op(100, 150, OpClass::kCompute, 7);
  EXPECT_EQ(track.StartOf(op, /*raw=*/false), 100);
  EXPECT_EQ(track.EndOf(op, /*raw=*/false), 150);
  EXPECT_EQ(track.StartOf(op, /*raw=*/true), 1107);
  EXPECT_EQ(track.EndOf(op, /*raw=*/true), 1157);
}

OperatorRecord Record(uint32_t rank, int64_t start, OpClass cls, uint64_t step = 1,
                      int32_t peer = -1) {
  OperatorRecord record;
  record.rank = rank;
  record.start_ns = start;
  record.end_ns = start + 50;
  record.raw_start_ns = start + 1000 + rank;
  record.name = 4;
  record.op_class = cls;
  record.step = step;
  record.group = 2;
  record.group_sequence = cls == OpClass::kCompute ? 0 : 5;
  record.peer = peer;
  return record;
}

TEST(MareyTrackTest, AddKeysOperatorsToJoinThemAcrossDevices) {
  MareyTrack sender, receiver;
  sender.rank = 0;
  receiver.rank = 1;
  const MareyTrack::Op send = sender.Add(Record(0, 100, OpClass::kSend, 1, /*peer=*/1));
  const MareyTrack::Op recv = receiver.Add(Record(1, 120, OpClass::kRecv, 1, /*peer=*/0));
  EXPECT_EQ(send.key, recv.key);
  // The same compute operator twice in a step: the second joins the other
  // device's second, not its first.
  const MareyTrack::Op first = sender.Add(Record(0, 200, OpClass::kCompute));
  const MareyTrack::Op second = sender.Add(Record(0, 300, OpClass::kCompute));
  EXPECT_NE(first.key, second.key);
  EXPECT_EQ(receiver.Add(Record(1, 210, OpClass::kCompute)).key, first.key);
  EXPECT_EQ(receiver.Add(Record(1, 310, OpClass::kCompute)).key, second.key);
  // The first operator fixed the device's raw clock offset.
  EXPECT_EQ(sender.raw_base, 1000);
  EXPECT_EQ(receiver.raw_base, 1001);
  EXPECT_EQ(sender.compute.size(), 2u);
  EXPECT_EQ(sender.comm.size(), 1u);
}

}  // namespace
}  // namespace trainscope::viewer
