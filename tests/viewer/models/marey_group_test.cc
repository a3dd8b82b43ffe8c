#include "trainscope/viewer/marey_group.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

class MareyGroupTest : public ::testing::Test {
 protected:
  MareyTrack& Device(uint32_t rank, uint32_t stage, std::string host) {
    info_[rank] = DeviceInfo{rank, stage, std::move(host)};
    auto& track = devices_[rank];
    track = std::make_unique<MareyTrack>();
    track->rank = rank;
    return *track;
  }
  static MareyTrack::Op Op(int64_t start, int64_t end, uint64_t key,
                           OpClass cls = OpClass::kCompute) {
    MareyTrack::Op op;
    op.start = start;
    op.end = end;
    op.key = key;
    op.cls = cls;
    return op;
  }
  void PrepareAll() {
    for (auto& [rank, track] : devices_) track->Prepare();
  }

  std::map<uint32_t, std::unique_ptr<MareyTrack>> devices_;
  std::map<uint32_t, DeviceInfo> info_;
};

TEST_F(MareyGroupTest, StageRowsHoldEachOperatorsMinAvgMax) {
  Device(0, 0, "a").Push(Op(100, 200, 7));
  Device(1, 0, "a").Push(Op(300, 600, 7));
  Device(2, 1, "b").Push(Op(0, 10, 7));
  PrepareAll();
  auto groups = MareyGroup::Build(MareyGroup::By::kStage, devices_, info_);
  ASSERT_EQ(groups.size(), 2u);
  const MareyGroup& stage0 = *groups.at("stage 0");
  EXPECT_EQ(stage0.ranks, (std::vector<uint32_t>{0, 1}));
  ASSERT_EQ(stage0.min.compute.size(), 1u);
  EXPECT_EQ(stage0.min.compute[0].start, 100);
  EXPECT_EQ(stage0.min.compute[0].end, 200);
  EXPECT_EQ(stage0.avg.compute[0].start, 200);
  EXPECT_EQ(stage0.avg.compute[0].end, 400);
  EXPECT_EQ(stage0.max.compute[0].start, 300);
  EXPECT_EQ(stage0.max.compute[0].end, 600);
  EXPECT_FALSE(stage0.max.dirty);  // prepared
  EXPECT_EQ(groups.at("stage 1")->ranks, (std::vector<uint32_t>{2}));
}

TEST_F(MareyGroupTest, HostsWithoutANameShareTheQuestionMark) {
  Device(0, 0, "node-1");
  Device(1, 0, "");
  Device(2, 1, "");
  PrepareAll();
  auto groups = MareyGroup::Build(MareyGroup::By::kHost, devices_, info_);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups.at("host node-1")->ranks, (std::vector<uint32_t>{0}));
  EXPECT_EQ(groups.at("host ?")->ranks, (std::vector<uint32_t>{1, 2}));
}

TEST_F(MareyGroupTest, ASendAndItsReceiveStayApartInsideAGroup) {
  MareyTrack& sender = Device(0, 0, "a");
  sender.Push(Op(100, 150, 9, OpClass::kSend));
  MareyTrack& receiver = Device(1, 0, "a");
  receiver.Push(Op(120, 170, 9, OpClass::kRecv));
  PrepareAll();
  auto groups = MareyGroup::Build(MareyGroup::By::kStage, devices_, info_);
  EXPECT_EQ(groups.at("stage 0")->avg.comm.size(), 2u);
}

}  // namespace
}  // namespace trainscope::viewer
