#include "trainscope/collector/analysis/step_assembler.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "analysis/synthetic_events.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using testing::Collective;
using testing::Counter;
using ::testing::ElementsAre;
using testing::FixedOffsetClock;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Mark;
using testing::Op;
using testing::PhaseMark;

constexpr int64_t kSecond = 1'000'000'000;

class StepAssemblerTest : public ::testing::Test {
 protected:
  void Make(uint32_t world, StepAssemblerOptions options = {}) {
    groups_.set_world_size(world);
    assembler_ = std::make_unique<StepAssembler>(
        &strings_, &groups_, &clock_, options,
        [this](ClosedStep&& s) { closed_.push_back(std::move(s)); });
    for (uint32_t r = 0; r < world; ++r) assembler_->OnDeviceOpened(r);
  }

  // Adds an event whose times are given on the reference clock.
  void Add(uint32_t rank, DeviceEvent e) {
    e.start_ns = clock_.ToLocal(rank, e.start_ns);
    e.end_ns = clock_.ToLocal(rank, e.end_ns);
    assembler_->Add(rank, e);
  }

  // Any event after a mark: tells that the step the mark ended has nothing
  // more coming (its memory peak may follow the mark).
  void MoveOn(uint32_t rank, int64_t at) { Add(rank, Op(relu_, at, at + 1)); }

  const ClosedStep* Step(uint64_t step) const {
    for (const ClosedStep& s : closed_) {
      if (s.report.step() == step) return &s;
    }
    return nullptr;
  }

  static const v1::DeviceStep* Device(const ClosedStep& s, uint32_t rank) {
    for (const v1::DeviceStep& d : s.report.devices()) {
      if (d.rank() == rank) return &d;
    }
    return nullptr;
  }

  static const v1::LinkStep* Link(const ClosedStep& s, uint32_t src, uint32_t dst,
                                  const std::string& type) {
    for (const v1::LinkStep& l : s.report.links()) {
      if (l.src_rank() == src && l.dst_rank() == dst && l.link_type() == type) return &l;
    }
    return nullptr;
  }

  JobStrings strings_;
  GroupDirectory groups_{&strings_};
  FixedOffsetClock clock_;
  std::vector<ClosedStep> closed_;
  std::unique_ptr<StepAssembler> assembler_;
  const uint32_t linear_ = strings_.Intern("aten::linear");
  const uint32_t addmm_ = strings_.Intern("aten::addmm");
  const uint32_t relu_ = strings_.Intern("aten::relu");
  const uint32_t allreduce_ = strings_.Intern("nccl:all_reduce");
  const uint32_t send_ = strings_.Intern("nccl:send");
  const uint32_t recv_ = strings_.Intern("nccl:recv");
  const uint32_t world_group_ = strings_.Intern("default_pg");
  const uint32_t flops_ = strings_.Intern("flops");
  const uint32_t peak_ = strings_.Intern("memory.peak_bytes");
  const uint32_t stage_ = strings_.Intern("pipeline.stage");
};

// Ranks 0 and 1 of a world of 3 run steps 1..3 before rank 2 attaches.
TEST_F(StepAssemblerTest, StepsWaitForEveryRankOfTheWorldToAttach) {
  groups_.set_world_size(3);
  assembler_ = std::make_unique<StepAssembler>(
      &strings_, &groups_, &clock_, StepAssemblerOptions{},
      [this](ClosedStep&& s) { closed_.push_back(std::move(s)); });
  for (uint32_t r = 0; r < 2; ++r) {
    assembler_->ExpectDevices(3);
    assembler_->OnDeviceOpened(r);
  }
  for (uint64_t step = 1; step <= 4; ++step) {
    for (uint32_t r = 0; r < 2; ++r) Add(r, Mark(step, static_cast<int64_t>(step) * 1000));
  }
  MoveOn(0, 4500);
  MoveOn(1, 4500);
  assembler_->Tick(kSecond);
  EXPECT_THAT(closed_, IsEmpty()) << "rank 2 of 3 has not attached yet";
  assembler_->ExpectDevices(3);
  assembler_->OnDeviceOpened(2);
  for (uint64_t step = 1; step <= 4; ++step) Add(2, Mark(step, static_cast<int64_t>(step) * 1000));
  MoveOn(2, 4500);
  ASSERT_NE(Step(1), nullptr);
  EXPECT_EQ(Step(1)->report.devices_size(), 3);
  EXPECT_THAT(Step(1)->report.missing_ranks(), IsEmpty());
}

TEST_F(StepAssemblerTest, ARankThatNeverAttachesHoldsStepsOnlyForTheSilenceTimeout) {
  groups_.set_world_size(3);
  assembler_ = std::make_unique<StepAssembler>(
      &strings_, &groups_, &clock_, StepAssemblerOptions{.silent_after_ns = 10 * kSecond},
      [this](ClosedStep&& s) { closed_.push_back(std::move(s)); });
  for (uint32_t r = 0; r < 2; ++r) {
    assembler_->ExpectDevices(3);
    assembler_->OnDeviceOpened(r);
  }
  for (uint32_t r = 0; r < 2; ++r) {
    Add(r, Mark(1, 1000));
    Add(r, Mark(2, 2000));
    MoveOn(r, 2500);
  }
  assembler_->Tick(kSecond);
  assembler_->Tick(10 * kSecond);
  EXPECT_THAT(closed_, IsEmpty());
  assembler_->Tick(11 * kSecond);
  ASSERT_NE(Step(1), nullptr);
  EXPECT_EQ(Step(1)->report.devices_size(), 2);
}

TEST_F(StepAssemblerTest, StepTimeAndPhasesFromPhaseMarks) {
  Make(2);
  for (uint32_t r = 0; r < 2; ++r) {
    Add(r, Mark(1, 1000));
    Add(r, PhaseMark(v1::PHASE_DATA_WAIT, 1, 1000, 1100));
    Add(r, Op(linear_, 1100, 1400));
    Add(r, PhaseMark(v1::PHASE_FORWARD, 1, 1100, 1500));
    Add(r, Op(linear_, 1500, 1800, 1, v1::OPERATOR_SCOPE_BACKWARD));
    Add(r, PhaseMark(v1::PHASE_BACKWARD, 1, 1500, 1900));
    Add(r, PhaseMark(v1::PHASE_OPTIMIZER, 1, 1900, 1950));
  }
  Add(0, Mark(2, 2000));
  EXPECT_EQ(Step(1), nullptr) << "rank 1 has not ended step 1";
  Add(1, Mark(2, 2100));
  EXPECT_EQ(Step(1), nullptr) << "what follows the marks may still belong to step 1";
  MoveOn(0, 2200);
  MoveOn(1, 2200);
  const ClosedStep* s = Step(1);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->report.start_ns(), 1000);
  EXPECT_EQ(s->report.end_ns(), 2100);
  EXPECT_THAT(s->report.missing_ranks(), IsEmpty());
  ASSERT_EQ(s->report.devices_size(), 2);
  const v1::DeviceStep* d1 = Device(*s, 1);
  ASSERT_NE(d1, nullptr);
  EXPECT_EQ(d1->step_time_ns(), 1100);
  EXPECT_EQ(d1->data_wait_ns(), 100);
  EXPECT_EQ(d1->forward_ns(), 400);
  EXPECT_EQ(d1->backward_ns(), 400);
  EXPECT_EQ(d1->optimizer_ns(), 50);
  EXPECT_EQ(d1->compute_ns(), 600);
  EXPECT_EQ(d1->idle_ns(), 500);
  EXPECT_EQ(d1->operators(), 2u);
  EXPECT_TRUE(d1->complete());
  EXPECT_EQ(Device(*s, 0)->step_time_ns(), 1000);
  EXPECT_EQ(s->operators.size(), 4u);
  EXPECT_EQ(assembler_->last_closed_step(), 1);
}

TEST_F(StepAssemblerTest, PhasesFromOperatorScopesWithoutPhaseMarks) {
  Make(1);
  Add(0, Mark(1, 1000));
  Add(0, Op(linear_, 1200, 1400, 1, v1::OPERATOR_SCOPE_FORWARD));
  Add(0, Op(linear_, 1500, 1800, 1, v1::OPERATOR_SCOPE_BACKWARD));
  Add(0, Mark(2, 2000));
  MoveOn(0, 2100);
  const ClosedStep* s = Step(1);
  ASSERT_NE(s, nullptr);
  const v1::DeviceStep& d = s->report.devices(0);
  EXPECT_EQ(d.data_wait_ns(), 200) << "gap from the step mark to the first operator";
  EXPECT_EQ(d.forward_ns(), 200);
  EXPECT_EQ(d.backward_ns(), 300);
  EXPECT_EQ(d.optimizer_ns(), 0);
}

TEST_F(StepAssemblerTest, EventsBeforeTheFirstMarkFormThePreviousStep) {
  Make(1);
  Add(0, Op(linear_, 100, 300));
  Add(0, Op(relu_, 400, 500));
  Add(0, Mark(1, 600));
  MoveOn(0, 700);
  const ClosedStep* s = Step(0);
  ASSERT_NE(s, nullptr);
  const v1::DeviceStep& d = s->report.devices(0);
  EXPECT_EQ(d.start_ns(), 100);
  EXPECT_EQ(d.end_ns(), 600);
  EXPECT_EQ(d.compute_ns(), 300);
  EXPECT_TRUE(d.complete());
}

TEST_F(StepAssemblerTest, ComputeIsTheUnionOfNestedOperatorsAndFlopsAttach) {
  Make(1);
  Add(0, Mark(1, 1000));
  // Thread 1 in end order: addmm inside linear, then relu.
  Add(0, Op(addmm_, 1100, 1300));
  Add(0, Counter(flops_, 1'000'000, 1300));
  Add(0, Op(linear_, 1050, 1400));
  Add(0, Op(relu_, 1500, 1600));
  // Thread 2 overlaps the end of linear.
  Add(0, Op(relu_, 1350, 1450, 2));
  Add(0, Mark(2, 2000));
  MoveOn(0, 2100);
  const ClosedStep* s = Step(1);
  ASSERT_NE(s, nullptr);
  const v1::DeviceStep& d = s->report.devices(0);
  EXPECT_EQ(d.compute_ns(), 400 + 100);  // [1050,1450] and [1500,1600]
  EXPECT_EQ(d.idle_ns(), 1000 - 500);
  EXPECT_EQ(d.flops(), 1'000'000u);
  EXPECT_DOUBLE_EQ(d.flops_per_second(), 1e6 / 500e-9);
  EXPECT_EQ(d.operators(), 4u);
  const auto addmm = std::find_if(s->operators.begin(), s->operators.end(),
                                  [&](const OperatorRecord& op) { return op.name == addmm_; });
  ASSERT_NE(addmm, s->operators.end());
  EXPECT_EQ(addmm->flops, 1'000'000u);
  EXPECT_EQ(addmm->op_class, v1::OPERATOR_CLASS_COMPUTE);
}

TEST_F(StepAssemblerTest, NestedOperatorsOfOneThreadCountOnce) {
  Make(1);
  Add(0, Mark(1, 1000));
  Add(0, Op(addmm_, 1100, 1300));
  Add(0, Op(addmm_, 1310, 1390));
  Add(0, Op(linear_, 1050, 1400));
  Add(0, Op(relu_, 1500, 1600));
  Add(0, Mark(2, 2000));
  MoveOn(0, 2100);
  ASSERT_NE(Step(1), nullptr);
  EXPECT_EQ(Step(1)->report.devices(0).compute_ns(), 350 + 100);
}

TEST_F(StepAssemblerTest, PeakMemoryAtTheMarkBelongsToTheEndedStep) {
  Make(1);
  Add(0, Mark(1, 1000));
  Add(0, Counter(peak_, 500, 1200));
  Add(0, Op(linear_, 1100, 1300));
  Add(0, Mark(2, 2000));
  Add(0, Counter(peak_, 900, 2000));  // the plugin: right after the mark
  Add(0, Counter(peak_, 300, 2500));
  Add(0, Mark(3, 3000));
  MoveOn(0, 3100);
  ASSERT_NE(Step(1), nullptr);
  ASSERT_NE(Step(2), nullptr);
  EXPECT_EQ(Step(1)->report.devices(0).peak_memory_bytes(), 900u);
  EXPECT_EQ(Step(2)->report.devices(0).peak_memory_bytes(), 300u);
}

TEST_F(StepAssemblerTest, CollectiveWaitIsUntilTheLastArrival) {
  Make(3);
  // Different clocks: the split must come from aligned times.
  clock_.set_offset(1, 5'000);
  clock_.set_offset(2, -3'000);
  const int64_t starts[] = {1100, 1200, 1500};  // rank 2 arrives last
  for (uint32_t r = 0; r < 3; ++r) {
    Add(r, Mark(1, 1000));
    Add(r, Op(linear_, 1010, 1090));
    Add(r, Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, allreduce_, world_group_, 7, starts[r], 1700,
                      3'000'000));
    Add(r, Mark(2, 2000));
    MoveOn(r, 2100);
  }
  const ClosedStep* s = Step(1);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Device(*s, 0)->collective_ns(), 600);
  EXPECT_EQ(Device(*s, 0)->wait_ns(), 400);
  EXPECT_EQ(Device(*s, 0)->transfer_ns(), 200);
  EXPECT_EQ(Device(*s, 0)->waited_for_rank(), 2);
  EXPECT_EQ(Device(*s, 1)->wait_ns(), 300);
  EXPECT_EQ(Device(*s, 1)->transfer_ns(), 200);
  EXPECT_EQ(Device(*s, 1)->waited_for_rank(), 2);
  EXPECT_EQ(Device(*s, 2)->wait_ns(), 0);
  EXPECT_EQ(Device(*s, 2)->transfer_ns(), 200);
  EXPECT_EQ(Device(*s, 2)->waited_for_rank(), -1);
  // Lateness: each arrival after the earliest (rank 0's).
  EXPECT_EQ(Device(*s, 0)->lateness_ns(), 0);
  EXPECT_EQ(Device(*s, 1)->lateness_ns(), 100);
  EXPECT_EQ(Device(*s, 2)->lateness_ns(), 400);
  EXPECT_EQ(Device(*s, 0)->collectives(), 1u);
  // idle = step - (compute + communication) = 1000 - 80 - 600.
  EXPECT_EQ(Device(*s, 0)->idle_ns(), 320);
  // Ring links 0->1->2->0, each 2(P-1)/P of the bytes in the transfer time.
  for (auto [src, dst] : {std::pair{0u, 1u}, {1u, 2u}, {2u, 0u}}) {
    const v1::LinkStep* l = Link(*s, src, dst, "collective");
    ASSERT_NE(l, nullptr) << src << "->" << dst;
    EXPECT_EQ(l->bytes(), 4'000'000u);
    EXPECT_EQ(l->duration_ns(), 200);
    EXPECT_DOUBLE_EQ(l->bytes_per_second(), 4e6 / 200e-9);
  }
  EXPECT_EQ(assembler_->stats().collectives_incomplete, 0u);
}

TEST_F(StepAssemblerTest, CollectiveInstanceAcrossStepsStillWaitsForTheLastArrival) {
  Make(2);
  Add(0, Mark(1, 1000));
  Add(0, Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, allreduce_, world_group_, 3, 1100, 2500, 64));
  Add(1, Mark(1, 1000));
  Add(1, Mark(2, 2000));  // rank 1 reaches the collective in its step 2
  Add(1, Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, allreduce_, world_group_, 3, 2100, 2500, 64));
  Add(0, Mark(2, 3000));
  MoveOn(0, 3100);
  ASSERT_NE(Step(1), nullptr);
  Add(0, Mark(3, 4000));
  Add(1, Mark(3, 4000));
  MoveOn(0, 4100);
  MoveOn(1, 4100);
  ASSERT_NE(Step(1), nullptr);
  ASSERT_NE(Step(2), nullptr);
  EXPECT_EQ(Device(*Step(1), 0)->wait_ns(), 1000);
  EXPECT_EQ(Device(*Step(1), 0)->waited_for_rank(), 1);
  EXPECT_EQ(Device(*Step(2), 1)->wait_ns(), 0);
  EXPECT_EQ(Device(*Step(2), 1)->transfer_ns(), 400);
}

TEST_F(StepAssemblerTest, PointToPointLinkBandwidthFromMatchedSendAndRecv) {
  const uint32_t pp = strings_.Intern("pg:pp[0,1]");
  Make(2);
  clock_.set_offset(1, 777);
  Add(0, Mark(1, 1000));
  Add(0, Collective(v1::COLLECTIVE_KIND_SEND, send_, pp, 0, 1000, 1600, 1'000'000, 1));
  Add(0, Mark(2, 2000));
  Add(1, Mark(1, 1000));
  Add(1, Collective(v1::COLLECTIVE_KIND_RECV, recv_, pp, 0, 1200, 1600, 1'000'000, 0));
  Add(1, Mark(2, 2000));
  MoveOn(0, 2100);
  MoveOn(1, 2100);
  const ClosedStep* s = Step(1);
  ASSERT_NE(s, nullptr);
  const v1::LinkStep* l = Link(*s, 0, 1, "p2p");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->bytes(), 1'000'000u);
  EXPECT_EQ(l->duration_ns(), 400);  // recv end - max(send start, recv start)
  EXPECT_DOUBLE_EQ(l->bytes_per_second(), 1e6 / 400e-9);
  EXPECT_EQ(l->transfers(), 1u);
  EXPECT_EQ(Link(*s, 1, 0, "p2p"), nullptr);
  // The sender waited for the receiver to arrive.
  EXPECT_EQ(Device(*s, 0)->wait_ns(), 200);
  EXPECT_EQ(Device(*s, 0)->waited_for_rank(), 1);
  EXPECT_EQ(Device(*s, 1)->wait_ns(), 0);
  const auto recv = std::find_if(s->operators.begin(), s->operators.end(),
                                 [&](const OperatorRecord& op) { return op.name == recv_; });
  ASSERT_NE(recv, s->operators.end());
  EXPECT_EQ(recv->op_class, v1::OPERATOR_CLASS_RECV);
  EXPECT_EQ(recv->start_ns, 1200);
  EXPECT_EQ(recv->raw_start_ns, 1200 - 777);
  EXPECT_EQ(recv->peer, 0);
}

TEST_F(StepAssemblerTest, StageBubbleIsTheMeanIdlePlusWaitOfTheStage) {
  Make(4);
  const int64_t busy[] = {800, 600, 500, 500};
  for (uint32_t r = 0; r < 4; ++r) {
    Add(r, Counter(stage_, r / 2, 10));
    Add(r, Mark(1, 1000));
    Add(r, Op(linear_, 1000, 1000 + busy[r]));
    Add(r, Counter(flops_, 100 * (r + 1), 1000 + busy[r]));
    Add(r, Mark(2, 2000));
    MoveOn(r, 2100);
  }
  const ClosedStep* s = Step(1);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->report.stages_size(), 2);
  const v1::StageStep& s0 = s->report.stages(0);
  const v1::StageStep& s1 = s->report.stages(1);
  EXPECT_EQ(s0.stage(), 0u);
  EXPECT_THAT(s0.ranks(), ElementsAre(0u, 1u));
  EXPECT_EQ(s0.compute_ns(), 700);
  EXPECT_EQ(s0.bubble_ns(), 300);  // idle 200 and 400
  EXPECT_EQ(s0.flops(), 300u);
  EXPECT_EQ(s1.stage(), 1u);
  EXPECT_THAT(s1.ranks(), ElementsAre(2u, 3u));
  EXPECT_EQ(s1.bubble_ns(), 500);
  EXPECT_EQ(s1.flops(), 700u);
  EXPECT_EQ(Device(*s, 3)->stage(), 1u);
}

TEST_F(StepAssemblerTest, SilentDeviceStopsBlockingAfterTheTimeout) {
  Make(2, {.silent_after_ns = 10 * kSecond});
  assembler_->Tick(0);
  Add(0, Mark(1, 1000));
  Add(1, Mark(1, 1000));
  Add(1, Op(linear_, 1100, 1200));  // then rank 1 goes quiet
  Add(0, Mark(2, 2000));
  Add(0, Mark(3, 3000));
  assembler_->Tick(1 * kSecond);
  assembler_->Tick(9 * kSecond);
  EXPECT_THAT(closed_, IsEmpty()) << "rank 1 is not silent yet";
  Add(0, Op(linear_, 3100, 3200));
  assembler_->Tick(12 * kSecond);
  ASSERT_EQ(closed_.size(), 2u);
  const v1::DeviceStep* late = Device(*Step(1), 1);
  ASSERT_NE(late, nullptr);
  EXPECT_FALSE(late->complete());
  EXPECT_TRUE(Device(*Step(1), 0)->complete());
  EXPECT_THAT(Step(2)->report.missing_ranks(), ElementsAre(1u));
  // Rank 1 comes back: its step 1 is gone, its next step counts again.
  Add(1, Op(linear_, 2100, 2200));
  EXPECT_EQ(assembler_->stats().events_late, 1u);
  Add(1, Mark(3, 3000));
  Add(1, Mark(4, 4000));
  Add(0, Mark(4, 4000));
  MoveOn(0, 4100);
  MoveOn(1, 4100);
  ASSERT_NE(Step(3), nullptr);
  EXPECT_THAT(Step(3)->report.missing_ranks(), IsEmpty());
  EXPECT_EQ(Step(3)->report.devices_size(), 2);
}

TEST_F(StepAssemblerTest, ClosedDeviceDoesNotBlock) {
  Make(2);
  Add(0, Mark(1, 1000));
  Add(1, Mark(1, 1000));
  Add(1, Op(linear_, 1100, 1200));
  assembler_->OnDeviceClosed(1);
  EXPECT_THAT(closed_, IsEmpty());
  Add(0, Mark(2, 2000));
  MoveOn(0, 2100);
  ASSERT_NE(Step(1), nullptr);
  EXPECT_FALSE(Device(*Step(1), 1)->complete());
  EXPECT_EQ(Device(*Step(1), 1)->end_ns(), 1200);
  Add(0, Mark(3, 3000));
  MoveOn(0, 3100);
  ASSERT_NE(Step(2), nullptr);
  EXPECT_THAT(Step(2)->report.missing_ranks(), IsEmpty()) << "closed, so not missing";
  EXPECT_EQ(Step(2)->report.devices_size(), 1);
}

TEST_F(StepAssemblerTest, OpenStepsAreBoundedByForcingTheOldest) {
  Make(2, {.max_open_steps = 2});
  Add(0, Mark(1, 1000));
  Add(1, Mark(1, 1000));
  Add(1, Op(linear_, 1100, 1200));  // rank 1 stays in step 1 (but is live)
  for (uint64_t step = 2; step <= 6; ++step) {
    Add(0, Op(linear_, step * 1000 + 100, step * 1000 + 200));
    Add(0, Mark(step, step * 1000));
  }
  const StepAssemblerStats stats = assembler_->stats();
  EXPECT_LE(stats.open_steps, 2u);
  EXPECT_EQ(stats.steps_forced, 4u);  // steps 1 to 4
  ASSERT_NE(Step(1), nullptr);
  EXPECT_TRUE(Step(1)->forced);
  EXPECT_FALSE(Device(*Step(1), 1)->complete());
  EXPECT_THAT(Step(2)->report.missing_ranks(), ElementsAre(1u));
  // Rank 1 is still inside the forced step: what it sends is dropped.
  Add(1, Op(linear_, 1300, 1400));
  EXPECT_EQ(assembler_->stats().events_late, 1u);
}

TEST_F(StepAssemblerTest, BufferedEventsAreBounded) {
  Make(1, {.max_buffered_events = 10});
  Add(0, Mark(1, 1000));
  for (int i = 0; i < 25; ++i) Add(0, Op(linear_, 1000 + i, 1001 + i));
  const StepAssemblerStats stats = assembler_->stats();
  EXPECT_LE(stats.buffered_events, 10u);
  EXPECT_EQ(stats.steps_forced, 1u);
  EXPECT_EQ(stats.events_late, 14u);  // after the forced close, until the next mark
  ASSERT_EQ(closed_.size(), 1u);
  EXPECT_EQ(closed_[0].operators.size(), 11u);
}

TEST_F(StepAssemblerTest, OutOfOrderMarkIsCountedAndIgnored) {
  Make(1);
  Add(0, Mark(5, 1000));
  Add(0, Op(linear_, 1100, 1200));
  Add(0, Mark(5, 1300));
  Add(0, Op(linear_, 1400, 1500));
  Add(0, Mark(6, 2000));
  MoveOn(0, 2100);
  EXPECT_EQ(assembler_->stats().marks_out_of_order, 1u);
  ASSERT_NE(Step(5), nullptr);
  EXPECT_EQ(Step(5)->report.devices(0).operators(), 2u);
}

TEST_F(StepAssemblerTest, FlushClosesEverythingAsIncomplete) {
  Make(2);
  Add(0, Mark(1, 1000));
  Add(0, Op(linear_, 1100, 1200));
  Add(1, Mark(1, 1000));
  assembler_->Flush();
  ASSERT_NE(Step(1), nullptr);
  EXPECT_FALSE(Device(*Step(1), 0)->complete());
  EXPECT_EQ(assembler_->stats().open_steps, 0u);
}

// A 3-rank, 4-step run with compute, a world all-reduce and a send/recv per
// step; rank r's events in its own order.
std::vector<std::vector<DeviceEvent>> SyntheticRun(uint32_t linear, uint32_t allreduce,
                                                   uint32_t world, uint32_t send, uint32_t recv,
                                                   uint32_t pp, uint32_t flops) {
  std::vector<std::vector<DeviceEvent>> events(3);
  for (uint32_t r = 0; r < 3; ++r) {
    auto& ev = events[r];
    for (uint64_t step = 1; step <= 4; ++step) {
      const int64_t t0 = static_cast<int64_t>(step) * 10'000 + r * 37;
      ev.push_back(Mark(step, t0));
      for (int i = 0; i < 5; ++i) {
        const int64_t s = t0 + 100 + i * 300 + r * 11;
        ev.push_back(Op(linear, s + 10, s + 150));
        ev.push_back(Counter(flops, 1000 + i, s + 150));
        ev.push_back(Op(linear, s, s + 200));
      }
      if (r == 0) {
        ev.push_back(
            Collective(v1::COLLECTIVE_KIND_SEND, send, pp, step, t0 + 2000, t0 + 2600, 4096, 1));
      } else if (r == 1) {
        ev.push_back(
            Collective(v1::COLLECTIVE_KIND_RECV, recv, pp, step, t0 + 2100, t0 + 2600, 4096, 0));
      }
      ev.push_back(Collective(v1::COLLECTIVE_KIND_ALL_REDUCE, allreduce, world, step,
                              t0 + 3000 + r * 250, t0 + 4000, 1 << 20));
    }
    ev.push_back(Mark(5, 50'000 + r));
    ev.push_back(Op(linear, 50'100, 50'200));
  }
  return events;
}

std::vector<std::string> RunInOrder(uint32_t seed) {
  JobStrings strings;
  GroupDirectory groups(&strings);
  groups.set_world_size(3);
  FixedOffsetClock clock;
  clock.set_offset(1, 123);
  clock.set_offset(2, -456);
  const auto events = SyntheticRun(strings.Intern("aten::linear"),
                                   strings.Intern("nccl:all_reduce"), strings.Intern("default_pg"),
                                   strings.Intern("nccl:send"), strings.Intern("nccl:recv"),
                                   strings.Intern("pg:pp[0,1]"), strings.Intern("flops"));
  std::vector<std::string> reports;
  StepAssembler assembler(&strings, &groups, &clock, {},
                          [&](ClosedStep&& s) { reports.push_back(s.report.DebugString()); });
  for (uint32_t r = 0; r < 3; ++r) assembler.OnDeviceOpened(r);
  std::mt19937 rng(seed);
  std::vector<size_t> next(events.size(), 0);
  while (true) {
    std::vector<uint32_t> pending;
    for (uint32_t r = 0; r < events.size(); ++r) {
      if (next[r] < events[r].size()) pending.push_back(r);
    }
    if (pending.empty()) break;
    // seed 0: rank by rank; otherwise batches of 1..7 events from a random rank.
    const uint32_t r = seed == 0 ? pending.front() : pending[rng() % pending.size()];
    const size_t batch = seed == 0 ? events[r].size() : 1 + rng() % 7;
    for (size_t i = 0; i < batch && next[r] < events[r].size(); ++i) {
      assembler.Add(r, events[r][next[r]++]);
    }
  }
  return reports;
}

TEST_F(StepAssemblerTest, InterleavedArrivalAcrossRanksGivesIdenticalReports) {
  const std::vector<std::string> reference = RunInOrder(0);
  ASSERT_EQ(reference.size(), 4u);
  EXPECT_THAT(reference[0], HasSubstr("link_type: \"p2p\""));
  EXPECT_THAT(reference[0], HasSubstr("link_type: \"collective\""));
  EXPECT_THAT(reference[0], HasSubstr("wait_ns: "));
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    EXPECT_EQ(RunInOrder(seed), reference) << "seed " << seed;
  }
}

}  // namespace
}  // namespace trainscope::collector
