#include "trainscope/collector/analysis/collective_matcher.h"

#include "analysis/synthetic_events.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using testing::Collective;
using testing::FixedOffsetClock;

class CollectiveMatcherTest : public ::testing::Test {
 protected:
  CollectiveMatcherTest() { groups_.set_world_size(3); }

  // An aligned communication operator of `rank`, as a closing step has it.
  OperatorRecord Operator(uint32_t rank, const DeviceEvent& e) const {
    OperatorRecord op;
    op.rank = rank;
    op.start_ns = clock_.ToReference(rank, e.start_ns);
    op.end_ns = clock_.ToReference(rank, e.end_ns);
    op.group = e.group;
    op.group_sequence = e.group_sequence;
    op.peer = e.peer;
    op.op_class = e.detail == v1::COLLECTIVE_KIND_SEND   ? v1::OPERATOR_CLASS_SEND
                  : e.detail == v1::COLLECTIVE_KIND_RECV ? v1::OPERATOR_CLASS_RECV
                                                         : v1::OPERATOR_CLASS_COLLECTIVE;
    return op;
  }

  JobStrings strings_;
  GroupDirectory groups_{&strings_};
  FixedOffsetClock clock_;
  uint32_t known_devices_ = 3;
  CollectiveMatcher matcher_{&groups_, &clock_, [this] { return known_devices_; }};
  const uint32_t world_ = strings_.Intern("default_pg");
  const uint32_t sub_ = strings_.Intern("pg:sub");
  const uint32_t name_ = strings_.Intern("nccl:all_reduce");
};

TEST_F(CollectiveMatcherTest, EachWaitsForTheLastArrivalOnTheReferenceClock) {
  clock_.set_offset(1, 50);  // rank 1's clock is 50 ns behind
  const DeviceEvent a0 =
      Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 7, 100, 200, 3000);
  const DeviceEvent a1 =
      Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 7, 80, 200, 3000);
  const DeviceEvent a2 =
      Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 7, 120, 200, 3000);
  matcher_.NoteArrival(0, a0, 1);
  matcher_.NoteArrival(1, a1, 1);  // at 130 on the reference clock: the last
  matcher_.NoteArrival(2, a2, 1);

  CollectiveMatcher::Links links;
  CollectiveMatcher::Wait w = matcher_.Match(Operator(0, a0), &links);
  EXPECT_EQ(w.wait_ns, 30);
  EXPECT_EQ(w.waited_for, 1u);
  EXPECT_EQ(w.lateness_ns, 0);
  // The ring 0->1->2->0 carries 2(P-1)/P of the bytes, once per instance.
  ASSERT_EQ(links.size(), 3u);
  const CollectiveMatcher::LinkTotals& ring = links.at({0, 1, true});
  EXPECT_EQ(ring.bytes, 4000u);
  EXPECT_EQ(ring.transfers, 1u);
  EXPECT_EQ(ring.duration_ns, 250 - 130);  // rank 1's end minus the last start

  w = matcher_.Match(Operator(1, a1), &links);
  EXPECT_EQ(w.wait_ns, 0);
  EXPECT_EQ(w.lateness_ns, 30);  // after rank 0, the earliest
  EXPECT_EQ(links.at({0, 1, true}).transfers, 1u) << "links are reported once";
  EXPECT_EQ(matcher_.incomplete(), 0u);
}

TEST_F(CollectiveMatcherTest, AWaitBeforeEveryoneArrivedIsCountedIncomplete) {
  const DeviceEvent a0 = Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 1, 100, 200, 64);
  const DeviceEvent a1 = Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 1, 150, 200, 64);
  matcher_.NoteArrival(0, a0, 1);
  matcher_.NoteArrival(1, a1, 1);
  CollectiveMatcher::Links links;
  const CollectiveMatcher::Wait w = matcher_.Match(Operator(0, a0), &links);
  EXPECT_EQ(w.wait_ns, 50);
  EXPECT_EQ(w.lateness_ns, 0) << "only for complete instances";
  EXPECT_TRUE(links.empty());
  EXPECT_EQ(matcher_.incomplete(), 1u);
}

TEST_F(CollectiveMatcherTest, AGroupWithoutListedMembersExpectsTheRanksSeenUsingIt) {
  const DeviceEvent a0 = Collective(v1::COLLECTIVE_KIND_BROADCAST, name_, sub_, 1, 100, 200, 64);
  const DeviceEvent a2 = Collective(v1::COLLECTIVE_KIND_BROADCAST, name_, sub_, 1, 110, 200, 64);
  matcher_.NoteArrival(0, a0, 1);
  matcher_.NoteArrival(2, a2, 1);
  CollectiveMatcher::Links links;
  matcher_.Match(Operator(0, a0), &links);
  EXPECT_EQ(matcher_.incomplete(), 0u);
  EXPECT_TRUE(links.empty()) << "a broadcast is not attributed to links";
}

TEST_F(CollectiveMatcherTest, WithoutAnyMembershipTheKnownDevicesTakePart) {
  GroupDirectory no_world(&strings_);  // the default group spans a world of unknown size
  CollectiveMatcher matcher(&no_world, &clock_, [] { return 2u; });
  const DeviceEvent a0 = Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 1, 100, 200, 64);
  const DeviceEvent a1 = Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 1, 100, 200, 64);
  matcher.NoteArrival(0, a0, 1);
  matcher.NoteArrival(1, a1, 1);
  CollectiveMatcher::Links links;
  matcher.Match(Operator(0, a0), &links);
  EXPECT_EQ(matcher.incomplete(), 0u);
  EXPECT_EQ(links.size(), 2u);  // the ring 0->1->0
}

TEST_F(CollectiveMatcherTest, ASendRecvPairIsAP2pLink) {
  const DeviceEvent send =
      Collective(v1::COLLECTIVE_KIND_SEND, name_, world_, 4, 100, 300, 1000, 1);
  const DeviceEvent recv =
      Collective(v1::COLLECTIVE_KIND_RECV, name_, world_, 4, 150, 350, 1000, 0);
  matcher_.NoteArrival(0, send, 1);
  matcher_.NoteArrival(1, recv, 1);
  CollectiveMatcher::Links links;
  const CollectiveMatcher::Wait w = matcher_.Match(Operator(1, recv), &links);
  EXPECT_EQ(w.wait_ns, 0);  // the sender was there first
  ASSERT_EQ(links.size(), 1u);
  const CollectiveMatcher::LinkTotals& p2p = links.at({0, 1, false});
  EXPECT_EQ(p2p.bytes, 1000u);
  EXPECT_EQ(p2p.duration_ns, 350 - 150);  // from the later start to the receive's end
}

TEST_F(CollectiveMatcherTest, InstancesNeverCompletedAreForgotten) {
  const DeviceEvent a0 = Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 9, 100, 200, 64);
  matcher_.NoteArrival(0, a0, 3);
  matcher_.ForgetOlderThan(11, 8);  // 3 + 8 is not before 11
  CollectiveMatcher::Links links;
  EXPECT_EQ(matcher_.Match(Operator(0, a0), &links).waited_for, 0u);
  matcher_.ForgetOlderThan(12, 8);
  EXPECT_EQ(matcher_.Match(Operator(0, a0), &links).waited_for, CollectiveMatcher::kNoRank);
}

TEST_F(CollectiveMatcherTest, TrafficCountsSendRecvExactlyAndModelsCollectives) {
  TrafficModel model;
  model.SetRankBackend(0, TrafficModel::Backend::kNccl);
  matcher_.EnableTraffic(&model, /*nccl_kernels=*/false);
  CollectiveMatcher::Links links;
  // Three sends of 1000 bytes from 0 to 1: 3000 bytes in 3 messages.
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    const DeviceEvent send =
        Collective(v1::COLLECTIVE_KIND_SEND, name_, world_, seq, 100, 300, 1000, 1);
    const DeviceEvent recv =
        Collective(v1::COLLECTIVE_KIND_RECV, name_, world_, seq, 150, 350, 1000, 0);
    matcher_.NoteArrival(0, send, 1);
    matcher_.NoteArrival(1, recv, 1);
    matcher_.Match(Operator(1, recv), &links);
    matcher_.Match(Operator(0, send), &links);
  }
  const CollectiveMatcher::PairTotals& p2p = links.traffic.at({0, 1, world_, true});
  EXPECT_EQ(p2p.bytes, 3000u);
  EXPECT_EQ(p2p.messages, 3u);
  EXPECT_EQ(p2p.duration_ns, 3 * (350 - 150));
  EXPECT_EQ(p2p.backend, TrafficModel::Backend::kNccl);

  // An all-reduce of 3000 bytes over the 3 ranks (NCCL, the first
  // arrival's backend): 4000 bytes in 4 messages to the next rank.
  for (uint32_t r = 0; r < 3; ++r) {
    const DeviceEvent a =
        Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 5, 100, 200 + r, 3000);
    matcher_.NoteArrival(r, a, 1);
  }
  const DeviceEvent a0 =
      Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, name_, world_, 5, 100, 200, 3000);
  matcher_.Match(Operator(0, a0), &links);
  ASSERT_EQ(links.traffic.size(), 4u);
  for (uint32_t r = 0; r < 3; ++r) {
    const CollectiveMatcher::PairTotals& t = links.traffic.at({r, (r + 1) % 3, world_, false});
    EXPECT_EQ(t.bytes, 4000u);
    EXPECT_EQ(t.messages, 4u);
    EXPECT_EQ(t.duration_ns, 200 + static_cast<int64_t>((r + 1) % 3) - 100);
  }
}

TEST_F(CollectiveMatcherTest, ClearingLinksClearsTheirTraffic) {
  CollectiveMatcher::Links links;
  links[{0, 1, false}] = {10, 1, 1};
  links.traffic[{0, 1, world_, true}] = {10, 1, 1, TrafficModel::Backend::kGloo};
  links.clear();
  EXPECT_TRUE(links.empty());
  EXPECT_TRUE(links.traffic.empty());
}

TEST_F(CollectiveMatcherTest, NoTrafficUnlessEnabled) {
  const DeviceEvent send = Collective(v1::COLLECTIVE_KIND_SEND, name_, world_, 1, 100, 300, 10, 1);
  const DeviceEvent recv = Collective(v1::COLLECTIVE_KIND_RECV, name_, world_, 1, 100, 300, 10, 0);
  matcher_.NoteArrival(0, send, 1);
  matcher_.NoteArrival(1, recv, 1);
  CollectiveMatcher::Links links;
  matcher_.Match(Operator(1, recv), &links);
  EXPECT_EQ(links.size(), 1u);
  EXPECT_TRUE(links.traffic.empty());
}

}  // namespace
}  // namespace trainscope::collector
