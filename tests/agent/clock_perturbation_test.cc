// The test-only clock perturbation (AgentOptions::test_clock_*): encoded
// batches and probe replies carry t' = t + offset + drift_ppm * 1e-6 * (t - origin).
#include "clock_perturbation.h"

#include <string>
#include <vector>

#include "batch_encoder.h"
#include "fake_transport.h"
#include "gtest/gtest.h"
#include "string_table.h"
#include "trainscope/agent/agent.h"
#include "trainscope/agent/event_batch_decoder.h"

namespace trainscope::agent {
namespace {

constexpr int64_t kOrigin = 5'000'000'000;  // 5 s on the monotonic clock

TEST(ClockPerturbationTest, AppliesOffsetAndDriftFromTheOrigin) {
  const ClockPerturbation p(/*offset_ns=*/7'000, /*drift_ppm=*/100, kOrigin);
  EXPECT_TRUE(p.active());
  EXPECT_EQ(p.Apply(kOrigin), kOrigin + 7'000);
  // 100 ppm of 1 s is 100 us; of -2 s (before the origin) -200 us.
  EXPECT_EQ(p.Apply(kOrigin + 1'000'000'000), kOrigin + 1'000'000'000 + 7'000 + 100'000);
  EXPECT_EQ(p.Apply(kOrigin - 2'000'000'000), kOrigin - 2'000'000'000 + 7'000 - 200'000);
  // 100 ppm of 12'345 ns is 1.2345 ns: rounded to 1.
  EXPECT_EQ(p.Apply(kOrigin + 12'345), kOrigin + 12'345 + 7'000 + 1);
}

TEST(ClockPerturbationTest, NegativeOffsetAndDrift) {
  const ClockPerturbation p(/*offset_ns=*/-3'000'000, /*drift_ppm=*/-50, kOrigin);
  // -50 ppm of 10 s is -500 us.
  EXPECT_EQ(p.Apply(kOrigin + 10'000'000'000), kOrigin + 10'000'000'000 - 3'000'000 - 500'000);
}

TEST(ClockPerturbationTest, DefaultIsInactiveAndTheIdentity) {
  const ClockPerturbation p;
  EXPECT_FALSE(p.active());
  EXPECT_EQ(p.Apply(123'456'789), 123'456'789);
  EXPECT_TRUE(ClockPerturbation(0, 0.5, kOrigin).active());
  EXPECT_TRUE(ClockPerturbation(1, 0, kOrigin).active());
}

TEST(ClockPerturbationTest, EncoderPerturbsStartAndEnd) {
  StringTable table(512, 100);
  const StringId op = table.Intern("op");
  BatchEncoder encoder;
  encoder.set_clock_perturbation(ClockPerturbation(1'000, 200, kOrigin));
  EventRecord record;
  record.kind = EventKind::kOperator;
  record.name = op;
  record.start_ns = kOrigin + 1'000'000'000;  // +200 us of drift
  record.end_ns = kOrigin + 3'000'000'000;    // +600 us
  encoder.Add(record, 1);
  record.start_ns = record.end_ns = kOrigin - 500'000'000;  // -100 us
  record.kind = EventKind::kStepMark;
  record.name = kEmptyString;
  encoder.Add(record, 1);
  auto events = DecodeEventBatch(encoder.Finish(table, v1::DropCounters()));
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].start_ns, kOrigin + 1'000'000'000 + 1'000 + 200'000);
  EXPECT_EQ((*events)[0].end_ns, kOrigin + 3'000'000'000 + 1'000 + 600'000);
  EXPECT_EQ((*events)[1].start_ns, kOrigin - 500'000'000 + 1'000 - 100'000);
  EXPECT_EQ((*events)[1].end_ns, (*events)[1].start_ns);
}

AgentOptions PerturbedOptions(int64_t offset_ns, double drift_ppm, int64_t origin_ns) {
  AgentOptions options;
  options.job_id = "clock-test";
  options.flush_interval = absl::Milliseconds(2);
  options.log_to_stderr = false;
  options.test_clock_offset_ns = offset_ns;
  options.test_clock_drift_ppm = drift_ppm;
  options.test_clock_origin_ns = origin_ns;
  return options;
}

struct Started {
  std::shared_ptr<FakeCollector> collector = std::make_shared<FakeCollector>();
  std::unique_ptr<Agent> agent;
};

Started StartFake(AgentOptions options) {
  Started s;
  auto agent =
      Agent::StartWithTransport(std::move(options), std::make_unique<FakeTransport>(s.collector));
  EXPECT_TRUE(agent.ok()) << agent.status();
  if (agent.ok()) s.agent = *std::move(agent);
  return s;
}

std::vector<DecodedEvent> DecodeAll(FakeCollector& collector) {
  std::vector<DecodedEvent> events;
  for (const v1::EventBatch& batch : collector.Batches()) {
    auto decoded = DecodeEventBatch(batch);
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    if (decoded.ok()) events.insert(events.end(), decoded->begin(), decoded->end());
  }
  return events;
}

// The formula, written out independently of ClockPerturbation.
int64_t Expected(int64_t t, int64_t offset_ns, double drift_ppm, int64_t origin_ns) {
  return t + offset_ns + std::llround(drift_ppm * 1e-6 * static_cast<double>(t - origin_ns));
}

TEST(AgentClockPerturbationTest, EveryKindOfRecordIsPerturbedByTheFormula) {
  constexpr int64_t kOffset = -2'500'000;
  constexpr double kDrift = 37.5;
  Started s = StartFake(PerturbedOptions(kOffset, kDrift, kOrigin));
  ASSERT_NE(s.agent, nullptr);
  const StringId op = s.agent->Intern("op");
  const StringId group = s.agent->Intern("pg:1[0,2]");
  const StringId counter = s.agent->Intern("pipeline.stage");
  const std::vector<int64_t> times = {kOrigin + 1'000'000'000, kOrigin + 1'000'123'457,
                                      kOrigin + 60'000'000'000, kOrigin - 4'000'000'000};
  s.agent->RecordOperator(op, times[0], times[1], 1, OperatorScope::kForward);
  s.agent->RecordCollective(op, CollectiveKind::kAllReduce, group, 1, 64, -1, times[1], times[2]);
  s.agent->RecordStep(3, times[2]);
  s.agent->RecordPhase(Phase::kForward, 3, times[3], times[0]);
  s.agent->RecordCounter(counter, 1, times[3]);
  s.agent->Shutdown(absl::Seconds(5));

  const std::vector<DecodedEvent> events = DecodeAll(*s.collector);
  ASSERT_EQ(events.size(), 5u);
  const std::vector<std::pair<int64_t, int64_t>> raw = {{times[0], times[1]},
                                                        {times[1], times[2]},
                                                        {times[2], times[2]},
                                                        {times[3], times[0]},
                                                        {times[3], times[3]}};
  for (size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(events[i].start_ns, Expected(raw[i].first, kOffset, kDrift, kOrigin));
    EXPECT_EQ(events[i].end_ns, Expected(raw[i].second, kOffset, kDrift, kOrigin));
  }
  // Sanity of the expectation itself: 37.5 ppm of 60 s is 2.25 ms.
  EXPECT_EQ(events[2].start_ns, kOrigin + 60'000'000'000 + kOffset + 2'250'000);
}

TEST(AgentClockPerturbationTest, ProbeRepliesArePerturbedByTheFormula) {
  constexpr int64_t kOffset = 40'000'000;
  constexpr double kDrift = -120;
  const int64_t origin = Agent::Now();
  Started s = StartFake(PerturbedOptions(kOffset, kDrift, origin));
  ASSERT_NE(s.agent, nullptr);
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  v1::Control probe;
  probe.mutable_probe()->set_probe_id(7);
  const int64_t receive_ns = origin + 3'000'000'000;  // as if stamped 3 s after the origin
  const int64_t before = Agent::Now();
  ASSERT_TRUE(s.collector->SendAt(probe, receive_ns));
  v1::ProbeReply reply;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& m : s.collector->Messages()) {
      if (m.has_probe_reply()) {
        reply = m.probe_reply();
        return true;
      }
    }
    return false;
  }));
  const int64_t after = Agent::Now();
  EXPECT_EQ(reply.probe_id(), 7u);
  EXPECT_EQ(reply.agent_receive_ns(), Expected(receive_ns, kOffset, kDrift, origin));
  // -120 ppm of 3 s is -360 us.
  EXPECT_EQ(reply.agent_receive_ns(), receive_ns + kOffset - 360'000);
  // The send time is the agent's clock when replying, perturbed the same way.
  EXPECT_GE(reply.agent_send_ns(), Expected(before, kOffset, kDrift, origin));
  EXPECT_LE(reply.agent_send_ns(), Expected(after, kOffset, kDrift, origin));
}

TEST(AgentClockPerturbationTest, OriginDefaultsToTheAgentStart) {
  constexpr double kDrift = 1000;  // 1 ms per s: a wrong origin shows in microseconds
  const int64_t before = Agent::Now();
  Started s = StartFake(PerturbedOptions(0, kDrift, /*origin_ns=*/0));
  const int64_t after = Agent::Now();
  ASSERT_NE(s.agent, nullptr);
  const int64_t t = after + 10'000'000'000;
  s.agent->RecordStep(1, t);
  s.agent->Shutdown(absl::Seconds(5));
  const std::vector<DecodedEvent> events = DecodeAll(*s.collector);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GE(events[0].start_ns, Expected(t, 0, kDrift, after));
  EXPECT_LE(events[0].start_ns, Expected(t, 0, kDrift, before));
}

TEST(AgentClockPerturbationTest, UnperturbedByDefault) {
  Started s = StartFake(PerturbedOptions(0, 0, 0));
  ASSERT_NE(s.agent, nullptr);
  s.agent->RecordStep(1, 123'456'789);
  s.agent->Shutdown(absl::Seconds(5));
  const std::vector<DecodedEvent> events = DecodeAll(*s.collector);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].start_ns, 123'456'789);
}

TEST(AgentClockPerturbationTest, RefusesADriftOfAMillionPpm) {
  for (double drift : {1e6, -1e6, std::nan("")}) {
    auto agent = Agent::StartWithTransport(
        PerturbedOptions(0, drift, 0),
        std::make_unique<FakeTransport>(std::make_shared<FakeCollector>()));
    ASSERT_FALSE(agent.ok());
    EXPECT_NE(agent.status().message().find("test_clock_drift_ppm"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainscope::agent
