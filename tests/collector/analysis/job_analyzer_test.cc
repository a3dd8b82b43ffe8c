#include "trainscope/collector/analysis/job_analyzer.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/event_batch_builder.h"
#include "trainscope/collector/offline/stored_job_analysis.h"
#include "trainscope/collector/store/job_log.h"

namespace trainscope::collector {
namespace {

namespace v1 = trainscope::v1;
using testing::EventBatchBuilder;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kRank1Skew = 5 * kMs;  // rank 1's clock runs 5 ms ahead
constexpr int kSteps = 6;

v1::Hello MakeHello(uint32_t rank, uint32_t world) {
  v1::Hello hello;
  hello.set_job_id("job");
  hello.set_rank(rank);
  hello.set_world_size(world);
  hello.set_host(rank < 1 ? "node-a" : "node-b");
  if (rank >= 1) hello.set_rack("rack-b");  // rank 0's agent names none
  return hello;
}

// One batch per step per rank, on the rank's own clock: data wait, a forward
// and a backward operator, a FLOPs counter, one all-reduce that ends at the
// same true time on both ranks (rank 1 arrives 2 ms late), then the step mark.
v1::EventBatch StepBatch(uint32_t rank, int step) {
  const int64_t skew = rank == 1 ? kRank1Skew : 0;
  const int64_t t0 = 1'000 * kMs + step * 20 * kMs + skew;  // the step starts here (true + skew)
  const int64_t compute_end = t0 + (rank == 1 ? 12 : 10) * kMs;
  EventBatchBuilder b(static_cast<uint64_t>(step + 1));
  b.Phase(v1::PHASE_DATA_WAIT, t0, t0 + 1 * kMs, step);
  b.Operator("aten::conv2d", t0 + 1 * kMs, t0 + 6 * kMs, v1::OPERATOR_SCOPE_FORWARD);
  b.Counter("flops", t0 + 6 * kMs, 1'000'000);
  b.Operator("aten::convolution_backward", t0 + 6 * kMs, compute_end,
             v1::OPERATOR_SCOPE_BACKWARD);
  b.Collective("gloo:all_reduce", compute_end, t0 + 18 * kMs, v1::COLLECTIVE_KIND_ALL_REDUCE, "",
               static_cast<uint64_t>(step + 1), 4096);
  b.StepMark(t0 + 20 * kMs, static_cast<uint64_t>(step + 1));
  return b.Build();
}

struct Collected {
  std::vector<v1::StepReport> steps;
  std::vector<v1::OperatorBatch> operators;
  std::vector<v1::ClockReport> clocks;
};

JobAnalyzerOutputs CollectInto(Collected* c) {
  JobAnalyzerOutputs outputs;
  outputs.on_step = [c](v1::StepReport step, v1::OperatorBatch ops) {
    c->steps.push_back(std::move(step));
    c->operators.push_back(std::move(ops));
  };
  outputs.on_clocks = [c](v1::ClockReport report) { c->clocks.push_back(std::move(report)); };
  return outputs;
}

void FeedJob(JobAnalyzer& analyzer) {
  analyzer.OnStreamOpened(MakeHello(0, 2), 0);
  analyzer.OnStreamOpened(MakeHello(1, 2), 0);
  // Ranks interleave the way batches arrive at a collector.
  for (int step = 0; step < kSteps; ++step) {
    analyzer.OnBatch(1, StepBatch(1, step), 0);
    analyzer.OnBatch(0, StepBatch(0, step), 0);
  }
}

const v1::DeviceStep& Device(const v1::StepReport& step, uint32_t rank) {
  for (const v1::DeviceStep& d : step.devices()) {
    if (d.rank() == rank) return d;
  }
  ADD_FAILURE() << "no device " << rank << " in step " << step.step();
  static const v1::DeviceStep kNone;
  return kNone;
}

TEST(JobAnalyzerTest, AlignsClocksAndAssemblesStepsFromBatches) {
  Collected out;
  JobAnalyzer analyzer({}, CollectInto(&out));
  FeedJob(analyzer);
  analyzer.Finish();

  // Step 0 ends at each rank's first mark; every step closes once.
  ASSERT_GE(out.steps.size(), static_cast<size_t>(kSteps - 1));
  for (size_t i = 0; i < out.steps.size(); ++i) EXPECT_EQ(out.steps[i].step(), i);
  const v1::StepReport& step = out.steps[2];
  ASSERT_EQ(step.devices_size(), 2);
  const v1::DeviceStep& r0 = Device(step, 0);
  const v1::DeviceStep& r1 = Device(step, 1);
  EXPECT_EQ(r0.step_time_ns(), 20 * kMs);
  EXPECT_EQ(r0.data_wait_ns(), 1 * kMs);
  EXPECT_EQ(r0.flops(), 1'000'000u);
  // Rank 1 computes 2 ms longer, so rank 0 waits for it in the all-reduce.
  EXPECT_NEAR(r0.wait_ns(), 2 * kMs, 20'000);
  EXPECT_EQ(r0.waited_for_rank(), 1);
  EXPECT_NEAR(r1.wait_ns(), 0, 20'000);

  // The operators come out on the reference clock: rank 1's conv2d starts at
  // the same true time as rank 0's despite its 5 ms skew.
  ASSERT_FALSE(out.operators.empty());
  std::map<uint32_t, int64_t> conv_start;
  for (const v1::AlignedOperator& op : out.operators[2].operators()) {
    if (out.operators[2].strings(op.name()) == "aten::conv2d") conv_start[op.rank()] = op.start_ns();
  }
  ASSERT_EQ(conv_start.size(), 2u);
  EXPECT_NEAR(conv_start[1] - conv_start[0], 0, 20'000);

  const v1::ClockReport clocks = analyzer.Clocks();
  ASSERT_EQ(clocks.devices_size(), 2);
  std::map<uint32_t, int64_t> offset;
  for (const v1::ClockEstimate& c : clocks.devices()) offset[c.rank()] = c.offset_ns();
  EXPECT_NEAR(offset[1] - offset[0], -kRank1Skew, 20'000);
  EXPECT_FALSE(out.clocks.empty());  // Finish reports the clocks
}

// A job naming a fresh operator in every step: past the name budget the
// names read as the over-budget name, the table stops growing, and every
// refusal is counted.
TEST(JobAnalyzerTest, DistinctNamesPastTheBudgetAreBoundedAndCounted) {
  JobAnalyzerOptions options;
  options.strings.max_names = 50;
  Collected out;
  JobAnalyzer analyzer(options, CollectInto(&out));
  analyzer.OnStreamOpened(MakeHello(0, 1), 0);
  constexpr int kJobSteps = 400;
  for (int step = 0; step < kJobSteps; ++step) {
    const int64_t t0 = 1'000 * kMs + step * 20 * kMs;
    EventBatchBuilder b(static_cast<uint64_t>(step + 1));
    b.Operator(absl::StrCat("generated_op_", step), t0, t0 + 5 * kMs, v1::OPERATOR_SCOPE_FORWARD);
    b.StepMark(t0 + 20 * kMs, static_cast<uint64_t>(step + 1));
    analyzer.OnBatch(0, b.Build(), 0);
  }
  analyzer.Finish();
  const JobAnalyzerStats stats = analyzer.stats();
  EXPECT_EQ(stats.names, 50u);
  // Each batch interns its own table: the operator name, and nothing else
  // new once the first batch named the shared ones.
  EXPECT_GE(stats.names_over_budget, static_cast<uint64_t>(kJobSteps - 50));
  EXPECT_LE(stats.names_over_budget, static_cast<uint64_t>(kJobSteps));
  // Late steps' operators read as the over-budget name, early ones as sent.
  ASSERT_GT(out.operators.size(), 300u);
  std::map<std::string, int> names;
  for (const v1::OperatorBatch& batch : out.operators) {
    for (const v1::AlignedOperator& op : batch.operators()) ++names[batch.strings(op.name())];
  }
  EXPECT_GT(names[std::string(JobStrings::kOverBudgetName)], 300);
  EXPECT_EQ(names["generated_op_3"], 1);
}

TEST(JobAnalyzerTest, ReleaseFreesTheOperatorsButKeepsTheSteps) {
  Collected out;
  JobAnalyzer analyzer({}, CollectInto(&out));
  FeedJob(analyzer);
  analyzer.Finish();
  const JobAnalyzerStats before = analyzer.stats();
  ASSERT_GT(before.operators_held, 0u);
  EXPECT_FALSE(before.released);
  const size_t steps_before = analyzer.Steps({}).size();
  ASSERT_GT(steps_before, 0u);

  analyzer.Release();
  const JobAnalyzerStats after = analyzer.stats();
  EXPECT_TRUE(after.released);
  EXPECT_EQ(after.operators_held, 0u);
  EXPECT_EQ(analyzer.Steps({}).size(), steps_before);
  EXPECT_EQ(analyzer.Clocks().devices_size(), 2);
  EXPECT_EQ(analyzer.Marey({}).operators().operators_size(), 0);
  analyzer.Release();  // idempotent
  EXPECT_TRUE(analyzer.stats().released);
}

TEST(JobAnalyzerTest, AnswersStepAndMareyQueries) {
  JobAnalyzer analyzer({}, {});
  FeedJob(analyzer);
  analyzer.Finish();

  v1::StepQuery all;
  const std::vector<v1::StepReport> steps = analyzer.Steps(all);
  ASSERT_GE(steps.size(), static_cast<size_t>(kSteps - 1));
  v1::StepQuery some;
  some.set_first_step(1);
  some.set_last_step(3);
  const std::vector<v1::StepReport> middle = analyzer.Steps(some);
  ASSERT_EQ(middle.size(), 3u);
  EXPECT_EQ(middle.front().step(), 1u);
  EXPECT_EQ(middle.back().step(), 3u);
  some.set_max_steps(2);
  EXPECT_EQ(analyzer.Steps(some).size(), 2u);

  v1::MareyQuery everything;
  const v1::MareyView view = analyzer.Marey(everything);
  // Four operators per step per rank: conv, conv backward, all-reduce (+ none else).
  EXPECT_GE(view.operators().operators_size(), 2 * 3 * (kSteps - 1));
  v1::MareyQuery one_rank;
  one_rank.add_ranks(1);
  const v1::MareyView rank1 = analyzer.Marey(one_rank);
  EXPECT_GT(rank1.operators().operators_size(), 0);
  for (const v1::AlignedOperator& op : rank1.operators().operators()) EXPECT_EQ(op.rank(), 1u);
  EXPECT_EQ(analyzer.hosts().at(1), "node-b");
  EXPECT_EQ(analyzer.racks().at(1), "rack-b");
  EXPECT_EQ(analyzer.racks().count(0), 0u);  // unknown, not ""
}

TEST(JobAnalyzerTest, StepsCarryPairTrafficPlacedOnTheRanksHosts) {
  Collected out;
  JobAnalyzer analyzer({}, CollectInto(&out));
  FeedJob(analyzer);
  analyzer.Finish();
  ASSERT_GE(out.steps.size(), 3u);
  // One 4096-byte all-reduce per step over 2 CPU ranks: gloo's ring sends
  // the whole buffer each way in 2 messages, from node-a to node-b and back.
  const v1::StepReport& step = out.steps[2];
  ASSERT_EQ(step.traffic_size(), 2);
  for (const v1::PairTraffic& p : step.traffic()) {
    EXPECT_EQ(p.step(), 2u);
    EXPECT_EQ(p.bytes(), 4096u);
    EXPECT_EQ(p.messages(), 2u);
    EXPECT_EQ(p.backend(), "gloo");
    EXPECT_FALSE(p.exact());
    EXPECT_EQ(p.locality(), v1::LINK_LOCALITY_CROSS_HOST);
    EXPECT_EQ(p.src_host(), p.src_rank() == 0 ? "node-a" : "node-b");
    EXPECT_EQ(p.dst_host(), p.dst_rank() == 0 ? "node-a" : "node-b");
    EXPECT_NE(p.src_rank(), p.dst_rank());
  }
  // The queries answer the same reports.
  v1::StepQuery q;
  q.set_first_step(2);
  q.set_last_step(2);
  ASSERT_EQ(analyzer.Steps(q).size(), 1u);
  EXPECT_EQ(analyzer.Steps(q)[0].traffic_size(), 2);

  // Switched off, steps carry none (and their links stay).
  Collected off_out;
  JobAnalyzer off({.traffic = false}, CollectInto(&off_out));
  FeedJob(off);
  off.Finish();
  ASSERT_GE(off_out.steps.size(), 3u);
  EXPECT_EQ(off_out.steps[2].traffic_size(), 0);
  EXPECT_EQ(off_out.steps[2].links_size(), step.links_size());
}

TEST(JobAnalyzerTest, LogRecordsDispatchLikeTheDirectCalls) {
  Collected direct_out, logged_out;
  JobAnalyzer direct({}, CollectInto(&direct_out));
  FeedJob(direct);
  direct.Finish();

  JobAnalyzer logged({}, CollectInto(&logged_out));
  for (uint32_t rank : {0u, 1u}) {
    v1::LogRecord r;
    *r.mutable_stream_opened()->mutable_hello() = MakeHello(rank, 2);
    logged.OnLogRecord(r);
  }
  for (int step = 0; step < kSteps; ++step) {
    for (uint32_t rank : {1u, 0u}) {
      v1::LogRecord r;
      r.mutable_batch()->set_rank(rank);
      *r.mutable_batch()->mutable_batch() = StepBatch(rank, step);
      logged.OnLogRecord(r);
    }
  }
  // A refused batch is only a marker: it must not count.
  v1::LogRecord refused;
  refused.mutable_batch()->set_rank(0);
  *refused.mutable_batch()->mutable_batch() = StepBatch(0, 99);
  refused.mutable_batch()->set_refused_reason("bad");
  logged.OnLogRecord(refused);
  logged.Finish();

  ASSERT_EQ(direct_out.steps.size(), logged_out.steps.size());
  for (size_t i = 0; i < direct_out.steps.size(); ++i) {
    EXPECT_EQ(direct_out.steps[i].SerializeAsString(), logged_out.steps[i].SerializeAsString());
  }
  EXPECT_EQ(direct.stats().events, logged.stats().events);
}

TEST(JobAnalyzerTest, AnalysesAStoredLog) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("job-analyzer-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    JobLog::Options options;
    options.dir = dir / "jobs" / "job";
    options.fsync = false;
    auto log = JobLog::Open(options, nullptr);
    ASSERT_TRUE(log.ok()) << log.status();
    for (uint32_t rank : {0u, 1u}) {
      v1::LogRecord r;
      *r.mutable_stream_opened()->mutable_hello() = MakeHello(rank, 2);
      ASSERT_TRUE((*log)->Append(r).ok());
    }
    for (int step = 0; step < kSteps; ++step) {
      for (uint32_t rank : {0u, 1u}) {
        v1::LogRecord r;
        r.mutable_batch()->set_rank(rank);
        *r.mutable_batch()->mutable_batch() = StepBatch(rank, step);
        ASSERT_TRUE((*log)->Append(r).ok());
      }
    }
    ASSERT_TRUE((*log)->Sync().ok());
  }
  absl::StatusOr<std::unique_ptr<JobAnalyzer>> analyzer = AnalyzeStoredJob(dir, "job");
  ASSERT_TRUE(analyzer.ok()) << analyzer.status();
  EXPECT_GE((*analyzer)->Steps({}).size(), static_cast<size_t>(kSteps - 1));

  absl::StatusOr<std::unique_ptr<JobAnalyzer>> missing = AnalyzeStoredJob(dir, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("nope"));
  std::filesystem::remove_all(dir);
}

// Hello as an agent sends it: its monotonic clock, naming the physical clock
// (empty `domain_id`: what agents before clock domains sent).
v1::Hello HelloWithClock(uint32_t rank, const std::string& domain_id) {
  v1::Hello hello = MakeHello(rank, 2);
  v1::ClockDomain* clock = hello.add_clock_domains();
  clock->set_name("monotonic");
  clock->set_realtime_minus_domain_ns(1'700'000'000'000'000'000);
  clock->set_domain_id(domain_id);
  return hello;
}

std::map<uint32_t, v1::ClockEstimate> ClocksOf(const JobAnalyzer& analyzer) {
  std::map<uint32_t, v1::ClockEstimate> by_rank;
  const v1::ClockReport report = analyzer.Clocks();
  for (const v1::ClockEstimate& c : report.devices()) by_rank[c.rank()] = c;
  return by_rank;
}

TEST(JobAnalyzerTest, RanksDeclaringOneClockShareItExactly) {
  // The Hellos say both ranks read one clock: the declaration wins over what
  // the collectives would fit (rank 1's events are 5 ms ahead here).
  JobAnalyzer analyzer({}, {});
  analyzer.OnStreamOpened(HelloWithClock(0, "boot:a1b2"), 0);
  analyzer.OnStreamOpened(HelloWithClock(1, "boot:a1b2"), 0);
  for (int step = 0; step < kSteps; ++step) {
    analyzer.OnBatch(1, StepBatch(1, step), 0);
    analyzer.OnBatch(0, StepBatch(0, step), 0);
  }
  std::map<uint32_t, v1::ClockEstimate> clocks = ClocksOf(analyzer);
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_EQ(clocks[1].clock_domain(), "monotonic@boot:a1b2");
  EXPECT_EQ(clocks[1].source(), v1::CLOCK_SOURCE_CLOCK_DOMAIN);
  EXPECT_EQ(clocks[1].domain_leader(), 0u);
  EXPECT_EQ(clocks[1].offset_to_reference_device_ns(), 0);
  EXPECT_EQ(clocks[1].offset_ns(), clocks[0].offset_ns());
}

TEST(JobAnalyzerTest, RanksOnOtherClocksAreFitted) {
  // Another boot, or a test's injected perturbation: another domain.
  for (const char* other : {"boot:c3d4", "boot:a1b2+test:5000000:0", ""}) {
    JobAnalyzer analyzer({}, {});
    analyzer.OnStreamOpened(HelloWithClock(0, "boot:a1b2"), 0);
    analyzer.OnStreamOpened(HelloWithClock(1, other), 0);
    for (int step = 0; step < kSteps; ++step) {
      analyzer.OnBatch(1, StepBatch(1, step), 0);
      analyzer.OnBatch(0, StepBatch(0, step), 0);
    }
    std::map<uint32_t, v1::ClockEstimate> clocks = ClocksOf(analyzer);
    ASSERT_EQ(clocks.size(), 2u) << other;
    EXPECT_EQ(clocks[1].source(), v1::CLOCK_SOURCE_COLLECTIVES) << other;
    EXPECT_EQ(clocks[1].domain_leader(), 1u) << other;
    // Reference device's clock minus rank 1's: rank 1 runs 5 ms ahead.
    EXPECT_NEAR(clocks[1].offset_to_reference_device_ns(), -kRank1Skew, 20'000) << other;
  }
}

TEST(JobAnalyzerTest, StoredLogOfAgentsWithoutClockDomainsStillReads) {
  // A log written before Hello named clock domains: the ClockDomain of old
  // agents (name and offset only) is these exact bytes.
  v1::ClockDomain old;
  ASSERT_TRUE(old.ParseFromString(std::string("\x0a\x09monotonic\x10\x80\x80\xa8\xb1\xe3\x9f"
                                               "\xe7\xcb\x17",
                                               21)));
  EXPECT_EQ(old.name(), "monotonic");
  EXPECT_EQ(old.realtime_minus_domain_ns(), 1'700'000'000'000'000'000);
  EXPECT_EQ(old.domain_id(), "");
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("job-analyzer-old-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    JobLog::Options options;
    options.dir = dir / "jobs" / "job";
    options.fsync = false;
    auto log = JobLog::Open(options, nullptr);
    ASSERT_TRUE(log.ok()) << log.status();
    for (uint32_t rank : {0u, 1u}) {
      v1::LogRecord r;
      v1::Hello* hello = r.mutable_stream_opened()->mutable_hello();
      *hello = MakeHello(rank, 2);
      *hello->add_clock_domains() = old;
      ASSERT_TRUE((*log)->Append(r).ok());
    }
    for (int step = 0; step < kSteps; ++step) {
      for (uint32_t rank : {0u, 1u}) {
        v1::LogRecord r;
        r.mutable_batch()->set_rank(rank);
        *r.mutable_batch()->mutable_batch() = StepBatch(rank, step);
        ASSERT_TRUE((*log)->Append(r).ok());
      }
    }
    ASSERT_TRUE((*log)->Sync().ok());
  }
  absl::StatusOr<std::unique_ptr<JobAnalyzer>> analyzer = AnalyzeStoredJob(dir, "job");
  ASSERT_TRUE(analyzer.ok()) << analyzer.status();
  std::map<uint32_t, v1::ClockEstimate> clocks = ClocksOf(**analyzer);
  ASSERT_EQ(clocks.size(), 2u);
  // Each old rank is a clock of its own, fitted on the collectives.
  EXPECT_EQ(clocks[1].clock_domain(), "");
  EXPECT_EQ(clocks[1].source(), v1::CLOCK_SOURCE_COLLECTIVES);
  EXPECT_NEAR(clocks[1].offset_to_reference_device_ns(), -kRank1Skew, 20'000);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainscope::collector
