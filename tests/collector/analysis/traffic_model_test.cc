#include "trainscope/collector/analysis/traffic_model.h"

#include <map>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using Backend = TrafficModel::Backend;

// (src, dst) -> (bytes, messages); fails on a pair listed twice, which the
// model must merge.
std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint32_t>> Flows(
    const TrafficModel& model, Backend backend, v1::CollectiveKind kind,
    const std::vector<uint32_t>& members, uint64_t bytes, size_t root = 0) {
  std::vector<TrafficModel::Flow> flows;
  model.Collective(backend, kind, members, bytes, root, &flows);
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint32_t>> out;
  for (const TrafficModel::Flow& f : flows) {
    EXPECT_NE(f.src, f.dst);
    const bool inserted =
        out.emplace(std::make_pair(f.src, f.dst), std::make_pair(f.bytes, f.messages)).second;
    EXPECT_TRUE(inserted) << "pair " << f.src << "->" << f.dst << " listed twice";
  }
  return out;
}

using Matrix = std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint32_t>>;

TEST(TrafficModelTest, NcclRingAllReduceOfFourRanks) {
  // 4 ranks, 4000 bytes: reduce-scatter and all-gather each pass 3 chunks
  // of 1000 bytes to the next rank: 6000 bytes in 6 messages per link.
  const Matrix m =
      Flows(TrafficModel(), Backend::kNccl, v1::COLLECTIVE_KIND_ALL_REDUCE, {0, 1, 2, 3}, 4000);
  const Matrix expected = {
      {{0, 1}, {6000, 6}}, {{1, 2}, {6000, 6}}, {{2, 3}, {6000, 6}}, {{3, 0}, {6000, 6}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, GlooRingAllReduceSendsToTheLeftNeighbour) {
  const Matrix m =
      Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_ALL_REDUCE, {10, 11, 12, 13}, 4000);
  const Matrix expected = {
      {{10, 13}, {6000, 6}}, {{11, 10}, {6000, 6}}, {{12, 11}, {6000, 6}}, {{13, 12}, {6000, 6}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, RingAllReduceSendsTwoNMinusOneOverNOfTheBufferPerRank) {
  for (uint32_t n = 2; n <= 16; ++n) {
    std::vector<uint32_t> members;
    for (uint32_t r = 0; r < n; ++r) members.push_back(r);
    const uint64_t bytes = 1'000'000ull * n;
    for (Backend b : {Backend::kGloo, Backend::kNccl}) {
      std::map<uint32_t, uint64_t> sent;
      for (const auto& [pair, f] :
           Flows(TrafficModel(), b, v1::COLLECTIVE_KIND_ALL_REDUCE, members, bytes)) {
        sent[pair.first] += f.first;
      }
      ASSERT_EQ(sent.size(), n);
      for (const auto& [rank, total] : sent) {
        EXPECT_EQ(total, 2ull * (n - 1) * 1'000'000ull) << "n=" << n << " rank " << rank;
      }
    }
  }
}

TEST(TrafficModelTest, GlooBroadcastIsABinomialTreeFromTheRoot) {
  // Virtual ranks (rank - root) mod 4: round 1 0->1, round 2 0->2 and 1->3.
  Matrix m =
      Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_BROADCAST, {0, 1, 2, 3}, 512);
  Matrix expected = {{{0, 1}, {512, 1}}, {{0, 2}, {512, 1}}, {{1, 3}, {512, 1}}};
  EXPECT_EQ(m, expected);
  // Root at index 2 of {10..13}: virtual 0,1,2,3 are 12,13,10,11.
  m = Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_BROADCAST, {10, 11, 12, 13}, 512,
            /*root=*/2);
  expected = {{{12, 13}, {512, 1}}, {{12, 10}, {512, 1}}, {{13, 11}, {512, 1}}};
  EXPECT_EQ(m, expected);
  // Five ranks: a fourth round reaches virtual rank 4 from 0.
  m = Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_BROADCAST, {0, 1, 2, 3, 4}, 8);
  expected = {{{0, 1}, {8, 1}}, {{0, 2}, {8, 1}}, {{1, 3}, {8, 1}}, {{0, 4}, {8, 1}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, NcclBroadcastAndReduceAreChainsThroughTheRoot) {
  Matrix m = Flows(TrafficModel(), Backend::kNccl, v1::COLLECTIVE_KIND_BROADCAST, {0, 1, 2, 3}, 100,
                   /*root=*/1);
  Matrix expected = {{{1, 2}, {100, 1}}, {{2, 3}, {100, 1}}, {{3, 0}, {100, 1}}};
  EXPECT_EQ(m, expected);
  m = Flows(TrafficModel(), Backend::kNccl, v1::COLLECTIVE_KIND_REDUCE, {0, 1, 2, 3}, 100);
  expected = {{{1, 2}, {100, 1}}, {{2, 3}, {100, 1}}, {{3, 0}, {100, 1}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, NcclTreeAllReduceGoesUpAndDownABinaryTree) {
  const TrafficModel tree(TrafficModel::NcclAllReduce::kTree);
  const Matrix m = Flows(tree, Backend::kNccl, v1::COLLECTIVE_KIND_ALL_REDUCE, {0, 1, 2, 3}, 64);
  const Matrix expected = {{{1, 0}, {64, 1}}, {{0, 1}, {64, 1}}, {{2, 0}, {64, 1}},
                           {{0, 2}, {64, 1}}, {{3, 1}, {64, 1}}, {{1, 3}, {64, 1}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, GlooReduceIsARingReduceScatterThenAGatherToTheRoot) {
  // Ring to the left with 3 chunks of 1000; then 1, 2 and 3 send their
  // chunk to root 0 (1's joins its ring link to 0).
  const Matrix m =
      Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_REDUCE, {0, 1, 2, 3}, 4000);
  const Matrix expected = {{{0, 3}, {3000, 3}}, {{1, 0}, {4000, 4}}, {{2, 1}, {3000, 3}},
                           {{3, 2}, {3000, 3}}, {{2, 0}, {1000, 1}}, {{3, 0}, {1000, 1}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, GlooBarrierIsADisseminationBarrier) {
  const Matrix m =
      Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_BARRIER, {0, 1, 2, 3}, 0);
  Matrix expected;
  for (uint32_t i = 0; i < 4; ++i) {
    expected[{i, (i + 1) % 4}] = {0, 1};
    expected[{i, (i + 2) % 4}] = {0, 1};
  }
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, AllToAllSendsOneNthToEveryOtherRank) {
  for (Backend b : {Backend::kGloo, Backend::kNccl}) {
    const Matrix m = Flows(TrafficModel(), b, v1::COLLECTIVE_KIND_ALL_TO_ALL, {0, 1, 2, 3}, 4000);
    ASSERT_EQ(m.size(), 12u);
    for (const auto& entry : m) {
      EXPECT_EQ(entry.second.first, 1000u);
      EXPECT_EQ(entry.second.second, 1u);
    }
  }
}

TEST(TrafficModelTest, GatheringCollectivesMoveNMinusOneContributionsPerRank) {
  // All-gather: each rank's 1000-byte contribution; NCCL's ring forwards 3.
  Matrix m =
      Flows(TrafficModel(), Backend::kNccl, v1::COLLECTIVE_KIND_ALL_GATHER, {0, 1, 2, 3}, 1000);
  Matrix expected = {
      {{0, 1}, {3000, 3}}, {{1, 2}, {3000, 3}}, {{2, 3}, {3000, 3}}, {{3, 0}, {3000, 3}}};
  EXPECT_EQ(m, expected);
  // gloo's halving-doubling reduce-scatter of 1000-byte chunks (a 4000-byte
  // buffer): 2000 bytes to the rank 2 away, then 1000 to the rank 1 away.
  m = Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_REDUCE_SCATTER, {0, 1, 2, 3}, 1000);
  expected = {{{0, 2}, {2000, 1}}, {{1, 3}, {2000, 1}}, {{2, 0}, {2000, 1}}, {{3, 1}, {2000, 1}},
              {{0, 1}, {1000, 1}}, {{1, 0}, {1000, 1}}, {{2, 3}, {1000, 1}}, {{3, 2}, {1000, 1}}};
  EXPECT_EQ(m, expected);
}

TEST(TrafficModelTest, OneMemberMovesNothing) {
  EXPECT_TRUE(
      Flows(TrafficModel(), Backend::kNccl, v1::COLLECTIVE_KIND_ALL_REDUCE, {3}, 4000).empty());
  EXPECT_TRUE(Flows(TrafficModel(), Backend::kGloo, v1::COLLECTIVE_KIND_SEND, {0, 1}, 4000).empty())
      << "send/recv is counted, not modelled";
}

TEST(TrafficModelTest, BackendsFollowTheDevice) {
  TrafficModel model;
  EXPECT_EQ(TrafficModel::BackendOfDevice("cuda:1"), Backend::kNccl);
  EXPECT_EQ(TrafficModel::BackendOfDevice("cpu"), Backend::kGloo);
  model.SetRankBackend(2, Backend::kNccl);
  EXPECT_EQ(model.RankBackend(2), Backend::kNccl);
  EXPECT_EQ(model.RankBackend(1), Backend::kGloo);
  EXPECT_EQ(model.RankBackend(99), Backend::kGloo);
}

TEST(TrafficModelTest, LocalityFromHostAndDevice) {
  EXPECT_EQ(TrafficModel::Locality("a", "cpu", "a", "cpu"), v1::LINK_LOCALITY_SAME_HOST);
  EXPECT_EQ(TrafficModel::Locality("a", "cuda:0", "a", "cuda:0"), v1::LINK_LOCALITY_SAME_DEVICE);
  EXPECT_EQ(TrafficModel::Locality("a", "cuda:0", "a", "cuda:1"), v1::LINK_LOCALITY_SAME_HOST);
  EXPECT_EQ(TrafficModel::Locality("a", "cuda:0", "b", "cuda:0"), v1::LINK_LOCALITY_CROSS_HOST);
  EXPECT_EQ(TrafficModel::Locality("", "cpu", "a", "cpu"), v1::LINK_LOCALITY_UNSPECIFIED);
}

}  // namespace
}  // namespace trainscope::collector
