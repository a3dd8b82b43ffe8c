#include "ring_drainer.h"

#include <atomic>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::agent {
namespace {

class RingDrainerTest : public ::testing::Test {
 protected:
  RingDrainerTest() : strings_(512, 1000), rings_(/*agent_serial=*/1, 1024, 64 << 20) {
    options_.max_batch_events = 100;
    options_.memory_budget_bytes = 64 << 20;
    options_.flush_interval = absl::Milliseconds(64);
    name_ = strings_.Intern("aten::add");
  }

  // `n` operators on a new ring of thread `tid`, values first, first + 1, ...
  std::shared_ptr<ThreadRing> Ring(uint32_t tid, int n, uint64_t first) {
    std::shared_ptr<ThreadRing> ring = rings_.CreateRing(tid);
    for (int i = 0; i < n; ++i) {
      EventRecord record;
      record.kind = EventKind::kOperator;
      record.name = name_;
      record.start_ns = 1000 + i;
      record.end_ns = 1001 + i;
      record.value = first + static_cast<uint64_t>(i);
      ring->Push(record);
    }
    return ring;
  }

  // Drains into decoded batches; `accept` batches are taken, the rest refused.
  std::vector<std::vector<DecodedEvent>> Drain(RingDrainer* drainer, int accept = 1 << 30) {
    std::vector<std::vector<DecodedEvent>> batches;
    uint64_t queued = 0;
    drainer->Drain([&] { return queued; }, [] { return v1::DropCounters(); },
                   [&](EncodedBatch batch, uint64_t bound) {
                     EXPECT_GT(bound, 0u);
                     if (static_cast<int>(batches.size()) >= accept) return false;
                     v1::EventBatch parsed;
                     EXPECT_TRUE(parsed.ParseFromString(batch.bytes));
                     auto events = DecodeEventBatch(parsed);
                     EXPECT_TRUE(events.ok()) << events.status();
                     EXPECT_EQ(batch.events, events->size());
                     queued += batch.bytes.size();
                     batches.push_back(*events);
                     return true;
                   });
    return batches;
  }

  AgentOptions options_;
  StringTable strings_;
  RingRegistry rings_;
  StringId name_;
};

TEST_F(RingDrainerTest, DrainsEveryRingInBatchesOfAtMostMaxBatchEvents) {
  auto a = Ring(11, 150, 0);
  auto b = Ring(22, 70, 1000);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  const auto batches = Drain(&drainer);
  std::map<uint32_t, std::vector<uint64_t>> by_thread;
  size_t total = 0;
  for (const auto& batch : batches) {
    EXPECT_LE(batch.size(), 100u);
    total += batch.size();
    for (const DecodedEvent& event : batch) by_thread[event.thread].push_back(event.value);
  }
  EXPECT_EQ(total, 220u);
  ASSERT_EQ(by_thread[11].size(), 150u);
  ASSERT_EQ(by_thread[22].size(), 70u);
  for (size_t i = 0; i < 150; ++i) EXPECT_EQ(by_thread[11][i], i);  // in order per thread
  for (size_t i = 0; i < 70; ++i) EXPECT_EQ(by_thread[22][i], 1000 + i);
  EXPECT_EQ(a->ring().size(), 0u);
  EXPECT_EQ(b->ring().size(), 0u);
}

TEST_F(RingDrainerTest, ARefusedBatchStopsTheDrainAndLaterRecordsStayInTheRings) {
  auto a = Ring(11, 250, 0);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  const auto batches = Drain(&drainer, /*accept=*/1);
  ASSERT_EQ(batches.size(), 1u);
  // The refused batch's 100 records left the ring (the queue counts them as
  // buffer_full); the rest wait for the next drain.
  EXPECT_EQ(a->ring().size(), 50u);
  EXPECT_EQ(Drain(&drainer).size(), 1u);
  EXPECT_EQ(a->ring().size(), 0u);
}

TEST_F(RingDrainerTest, AtTheMemoryBoundRecordsStayInTheRings) {
  options_.memory_budget_bytes = 1;  // less than the rings hold already
  auto a = Ring(11, 10, 0);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  EXPECT_TRUE(Drain(&drainer).empty());
  EXPECT_EQ(a->ring().size(), 10u);
}

TEST_F(RingDrainerTest, TheFlushIntervalFollowsHowFullTheRingsAre) {
  auto a = Ring(11, 0, 0);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  EXPECT_EQ(drainer.flush_interval(), absl::Milliseconds(64));
  const size_t capacity = a->ring().capacity();
  ASSERT_GT(capacity, 0u);
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < capacity * 3 / 4; ++i) a->Push(EventRecord{});
    Drain(&drainer);
  }
  EXPECT_EQ(drainer.flush_interval(), absl::Milliseconds(8));
  for (int round = 0; round < 10; ++round) {
    a->Push(EventRecord{});
    Drain(&drainer);
  }
  EXPECT_EQ(drainer.flush_interval(), absl::Milliseconds(64));  // never above the options'
}


// ---- raw operators: ticks written by a hook, mapped by the sender ----------

// A tick clock whose fit the test moves between drains (a recalibration).
class FakeTickMapper final : public TickMapper {
 public:
  TickFit CurrentFit() const override { return fit; }
  TickFit fit;
};

// ns per tick as TickFit's fixed point.
uint64_t Mult(double ns_per_tick) {
  return static_cast<uint64_t>(ns_per_tick * static_cast<double>(uint64_t{1} << TickFit::kShift));
}

class RawOperatorTest : public RingDrainerTest {
 protected:
  RawOperatorTest() {
    options_.tick_mapper = &mapper_;
    mapper_.fit = TickFit{/*base_ticks=*/1'000'000, /*base_ns=*/5'000'000'000, Mult(0.5)};
  }
  // A ring whose raw view follows this test's switches.
  std::shared_ptr<ThreadRing> RawRing(uint32_t tid) {
    std::shared_ptr<ThreadRing> ring = rings_.CreateRing(tid);
    ring->BindSwitches(&recording_, &sampling_period_);
    return ring;
  }
  std::vector<DecodedEvent> DrainAll(RingDrainer* drainer) {
    std::vector<DecodedEvent> all;
    for (auto& batch : Drain(drainer)) all.insert(all.end(), batch.begin(), batch.end());
    return all;
  }

  FakeTickMapper mapper_;
  std::atomic<bool> recording_{true};
  std::atomic<uint32_t> sampling_period_{1};
};

TEST_F(RawOperatorTest, TicksAreMappedWithTheFitReadAtEachDrain) {
  auto ring = RawRing(7);
  const trainscope_raw_ring* raw = ring->raw();
  ASSERT_TRUE(trainscope_raw_ring_accepts(raw));
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  // 0.5 ns per tick from (1e6 ticks, 5 s).
  trainscope_raw_ring_push_operator(raw, name_, 1'000'000, 1'000'400, 8, TRAINSCOPE_SCOPE_FORWARD);
  trainscope_raw_ring_push_operator(raw, name_, 999'000, 1'002'000, 0, TRAINSCOPE_SCOPE_BACKWARD);
  std::vector<DecodedEvent> first = DrainAll(&drainer);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].kind, EventKind::kOperator);
  EXPECT_EQ(first[0].name, "aten::add");
  EXPECT_EQ(first[0].thread, 7u);
  EXPECT_EQ(first[0].start_ns, 5'000'000'000);
  EXPECT_EQ(first[0].end_ns, 5'000'000'200);
  EXPECT_EQ(first[0].value, 8u);
  EXPECT_EQ(first[0].detail, static_cast<uint32_t>(OperatorScope::kForward));
  // A tick before the fit's base maps below it (the fit was anchored later).
  EXPECT_EQ(first[1].start_ns, 4'999'999'500);
  EXPECT_EQ(first[1].end_ns, 5'000'001'000);
  EXPECT_EQ(first[1].detail, static_cast<uint32_t>(OperatorScope::kBackward));

  // Recalibrated between the sender's batches: re-anchored at 2e6 ticks and
  // 0.25 ns per tick. What is drained now maps with the new fit, all of it.
  mapper_.fit = TickFit{2'000'000, 6'000'000'000, Mult(0.25)};
  trainscope_raw_ring_push_operator(raw, name_, 2'000'000, 2'004'000, 9, TRAINSCOPE_SCOPE_FORWARD);
  trainscope_raw_ring_push_operator(raw, name_, 2'004'000, 2'008'000, 10, TRAINSCOPE_SCOPE_FORWARD);
  std::vector<DecodedEvent> second = DrainAll(&drainer);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].start_ns, 6'000'000'000);
  EXPECT_EQ(second[0].end_ns, 6'000'001'000);
  EXPECT_EQ(second[1].start_ns, 6'000'001'000);
  EXPECT_EQ(second[1].end_ns, 6'000'002'000);
  EXPECT_EQ(ring->ring().size(), 0u);
}

TEST_F(RawOperatorTest, WithoutATickMapperTicksAreNanoseconds) {
  options_.tick_mapper = nullptr;  // the monotonic clock: ticks are ns
  auto ring = RawRing(7);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  trainscope_raw_ring_push_operator(ring->raw(), name_, 123'456'789, 123'457'000, 1,
                                    TRAINSCOPE_SCOPE_FORWARD);
  const std::vector<DecodedEvent> events = DrainAll(&drainer);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].start_ns, 123'456'789);
  EXPECT_EQ(events[0].end_ns, 123'457'000);
}

TEST_F(RawOperatorTest, AThreadsEndsStayMonotonicWhenARecalibrationMovesTheFitBack) {
  auto ring = RawRing(7);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  mapper_.fit = TickFit{0, 1'000'000, Mult(1.0)};
  trainscope_raw_ring_push_operator(ring->raw(), name_, 1000, 2000, 1, TRAINSCOPE_SCOPE_FORWARD);
  ASSERT_EQ(DrainAll(&drainer)[0].end_ns, 1'002'000);
  // The next fit puts tick 2100 at 1'001'600, below the last end 1'002'000.
  mapper_.fit = TickFit{0, 999'500, Mult(1.0)};
  trainscope_raw_ring_push_operator(ring->raw(), name_, 1900, 2100, 2, TRAINSCOPE_SCOPE_FORWARD);
  trainscope_raw_ring_push_operator(ring->raw(), name_, 2200, 5000, 3, TRAINSCOPE_SCOPE_FORWARD);
  const std::vector<DecodedEvent> events = DrainAll(&drainer);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].end_ns, 1'002'000);  // held at the previous end
  EXPECT_EQ(events[0].end_ns - events[0].start_ns, 200);  // its duration kept
  EXPECT_EQ(events[1].end_ns, 1'004'500);  // past it: the fit's own
  EXPECT_EQ(events[1].start_ns, 1'001'700);
  // Another thread's ring keeps its own last end.
  auto other = RawRing(8);
  trainscope_raw_ring_push_operator(other->raw(), name_, 100, 200, 4, TRAINSCOPE_SCOPE_FORWARD);
  const std::vector<DecodedEvent> others = DrainAll(&drainer);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].end_ns, 999'700);
}

TEST_F(RawOperatorTest, RawAndGeneralRecordsShareTheRingInOrderAndAllAreCounted) {
  auto ring = RawRing(7);
  RingDrainer drainer(options_, &rings_, &strings_, ClockPerturbation());
  mapper_.fit = TickFit::Identity();
  // Every slot used once by a collective first: a raw record must overwrite
  // what a slot held (its kind) to be read back as an operator.
  const StringId group = strings_.Intern("group-a");
  for (size_t i = 0; i < ring->ring().capacity(); ++i) {
    EventRecord collective;
    collective.kind = EventKind::kCollective;
    collective.name = name_;
    collective.group = group;
    collective.peer = 3;
    collective.aux = 77;
    ring->Push(collective);
  }
  EXPECT_EQ(DrainAll(&drainer).size(), ring->ring().capacity());
  const uint64_t before = ring->recorded();
  for (uint64_t i = 0; i < 300; ++i) {
    if (i % 3 == 0) {
      EventRecord record;
      record.kind = EventKind::kOperator;
      record.name = name_;
      record.start_ns = static_cast<int64_t>(10 * i);
      record.end_ns = static_cast<int64_t>(10 * i + 5);
      record.value = i;
      ring->Push(record);
    } else {
      trainscope_raw_ring_push_operator(ring->raw(), name_, 10 * i, 10 * i + 5, i,
                                        TRAINSCOPE_SCOPE_FORWARD);
    }
  }
  EXPECT_EQ(ring->recorded() - before, 300u);
  const std::vector<DecodedEvent> events = DrainAll(&drainer);
  ASSERT_EQ(events.size(), 300u);
  for (uint64_t i = 0; i < 300; ++i) {
    EXPECT_EQ(events[i].kind, EventKind::kOperator);
    EXPECT_EQ(events[i].value, i);
    EXPECT_EQ(events[i].start_ns, static_cast<int64_t>(10 * i));
    EXPECT_EQ(events[i].end_ns, static_cast<int64_t>(10 * i + 5));
  }
}

TEST_F(RawOperatorTest, AFullRingCountsEachRawPushItDrops) {
  RingRegistry small(/*agent_serial=*/2, /*ring_capacity=*/64, 64 << 20);
  std::shared_ptr<ThreadRing> ring = small.CreateRing(9);
  ring->BindSwitches(&recording_, &sampling_period_);
  const size_t capacity = ring->ring().capacity();
  for (size_t i = 0; i < capacity + 5; ++i) {
    trainscope_raw_ring_push_operator(ring->raw(), name_, i, i + 1, i, TRAINSCOPE_SCOPE_FORWARD);
  }
  EXPECT_EQ(ring->recorded(), capacity);
  EXPECT_EQ(ring->dropped_full(), 5u);
  // Room again once the consumer took some: the producer sees it.
  EXPECT_EQ(ring->ring().Consume(10, [](const EventRecord&) {}), 10u);
  trainscope_raw_ring_push_operator(ring->raw(), name_, 1, 2, 0, TRAINSCOPE_SCOPE_FORWARD);
  EXPECT_EQ(ring->recorded(), capacity + 1);
  EXPECT_EQ(ring->dropped_full(), 5u);

  // A ring denied by the memory budget (capacity 0) drops every push, counted.
  RingRegistry none(/*agent_serial=*/3, /*ring_capacity=*/64, /*budget_bytes=*/0);
  std::shared_ptr<ThreadRing> empty = none.CreateRing(10);
  ASSERT_EQ(empty->ring().capacity(), 0u);
  for (int i = 0; i < 3; ++i) {
    trainscope_raw_ring_push_operator(empty->raw(), name_, 1, 2, 0, TRAINSCOPE_SCOPE_FORWARD);
  }
  EXPECT_EQ(empty->recorded(), 0u);
  EXPECT_EQ(empty->dropped_full(), 3u);
}

TEST_F(RawOperatorTest, ARingAcceptsRawPushesOnlyWhileRecordingEveryOperator) {
  auto ring = RawRing(7);
  EXPECT_TRUE(trainscope_raw_ring_accepts(ring->raw()));
  recording_ = false;
  EXPECT_FALSE(trainscope_raw_ring_accepts(ring->raw()));
  recording_ = true;
  sampling_period_ = 4;  // sampling is the general path's
  EXPECT_FALSE(trainscope_raw_ring_accepts(ring->raw()));
  sampling_period_ = 0;
  EXPECT_TRUE(trainscope_raw_ring_accepts(ring->raw()));
  // Not bound to an agent: never.
  EXPECT_FALSE(trainscope_raw_ring_accepts(rings_.CreateRing(8)->raw()));
}

}  // namespace
}  // namespace trainscope::agent
