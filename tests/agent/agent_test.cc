#include "trainscope/agent/agent.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fake_transport.h"
#include "gtest/gtest.h"
#include "trainscope/agent/event_batch_decoder.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/v1/loss.pb.h"
#include "trainscope_agent.h"

namespace trainscope::agent {
namespace {

AgentOptions TestOptions() {
  AgentOptions options;
  options.job_id = "test-job";
  options.rank = 1;
  options.world_size = 4;
  options.framework = "gtest";
  options.flush_interval = absl::Milliseconds(2);
  options.log_to_stderr = false;
  return options;
}

struct Started {
  std::shared_ptr<FakeCollector> collector = std::make_shared<FakeCollector>();
  std::unique_ptr<Agent> agent;
};

Started StartFake(AgentOptions options = TestOptions()) {
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

// After Shutdown every recorded event is acknowledged, refused or dropped.
void ExpectExactAccounting(const AgentStats& s, uint64_t attempted) {
  EXPECT_EQ(attempted, s.events_recorded + s.dropped_ring_full + s.events_sampled_out);
  EXPECT_EQ(s.events_recorded,
            s.events_acked + s.events_refused + s.dropped_buffer_full + s.dropped_shutdown);
}

int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);  // nothing listens there any more
  return ntohs(address.sin_port);
}

TEST(AgentTest, HelloDescribesTheAgent) {
  Started s = StartFake();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  s.agent->Shutdown(absl::Seconds(5));
  const auto messages = s.collector->Messages();
  ASSERT_FALSE(messages.empty());
  ASSERT_TRUE(messages.front().has_hello());
  const v1::Hello& hello = messages.front().hello();
  EXPECT_EQ(hello.protocol_version(), kProtocolVersion);
  EXPECT_EQ(hello.job_id(), "test-job");
  EXPECT_EQ(hello.rank(), 1u);
  EXPECT_EQ(hello.world_size(), 4u);
  EXPECT_EQ(hello.framework(), "gtest");
  EXPECT_EQ(hello.pid(), static_cast<uint32_t>(getpid()));
  EXPECT_FALSE(hello.host().empty());
  EXPECT_EQ(hello.agent_instance_id(), s.agent->instance_id());
  EXPECT_NE(hello.agent_instance_id(), 0u);
  ASSERT_EQ(hello.clock_domains_size(), 1);
  EXPECT_EQ(hello.clock_domains(0).name(), "monotonic");
  EXPECT_GT(hello.clock_domains(0).realtime_minus_domain_ns(), 0);
  EXPECT_TRUE(hello.recording());
  // A clean shutdown ends with Goodbye, without an error.
  ASSERT_TRUE(messages.back().has_goodbye());
  EXPECT_EQ(messages.back().goodbye().error(), "");
}

TEST(AgentTest, HelloCarriesTheRackItWasGiven) {
  AgentOptions options = TestOptions();
  options.rack = "rack-7";
  Started s = StartFake(std::move(options));
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  s.agent->Shutdown(absl::Seconds(5));
  const auto messages = s.collector->Messages();
  ASSERT_FALSE(messages.empty());
  ASSERT_TRUE(messages.front().has_hello());
  EXPECT_EQ(messages.front().hello().rack(), "rack-7");
}

TEST(AgentTest, AnAbnormalEndSaysWhyInItsGoodbye) {
  Started s = StartFake();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  s.agent->Shutdown(absl::Seconds(5), "RuntimeError: a peer closed the connection");
  const auto messages = s.collector->Messages();
  ASSERT_FALSE(messages.empty());
  ASSERT_TRUE(messages.back().has_goodbye());
  EXPECT_EQ(messages.back().goodbye().error(), "RuntimeError: a peer closed the connection");
}

TEST(AgentTest, ManyThreadsExactCountsAndPerThreadOrder) {
  AgentOptions options = TestOptions();
  options.ring_capacity_events = 1024;  // small: some records may be dropped, all counted
  Started s = StartFake(options);
  const StringId name = s.agent->Intern("aten::addmm");
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 50000;
  std::atomic<uint64_t> attempted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      uint64_t mine = 0;
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const int64_t now = Agent::Now();
        mine += s.agent->RecordOperator(name, now, now + 10, i, OperatorScope::kForward);
      }
      attempted += mine;
    });
  }
  for (auto& t : threads) t.join();  // exited threads' rings are drained, then freed
  s.agent->Shutdown(absl::Seconds(5));
  const AgentStats stats = s.agent->stats();
  EXPECT_EQ(attempted.load(), kThreads * kPerThread);
  ExpectExactAccounting(stats, attempted.load());
  EXPECT_EQ(stats.events_acked, stats.events_recorded);  // the fake acks everything
  EXPECT_EQ(stats.dropped_shutdown, 0u);

  // What arrived is exactly what was recorded, in order per thread.
  const std::vector<DecodedEvent> events = DecodeAll(*s.collector);
  EXPECT_EQ(events.size(), stats.events_recorded);
  std::map<uint32_t, std::vector<uint64_t>> by_thread;
  for (const DecodedEvent& e : events) {
    EXPECT_EQ(e.name, "aten::addmm");
    EXPECT_EQ(e.end_ns - e.start_ns, 10);
    by_thread[e.thread].push_back(e.value);
  }
  EXPECT_EQ(by_thread.size(), static_cast<size_t>(kThreads));
  for (const auto& [thread, values] : by_thread) {
    for (size_t i = 1; i < values.size(); ++i) {
      ASSERT_LT(values[i - 1], values[i]) << "thread " << thread << " at " << i;
    }
  }
  // Batch sequences are 1, 2, 3, ... and the drop counters never decrease.
  uint64_t expected_sequence = 1, ring_full = 0;
  for (const v1::EventBatch& batch : s.collector->Batches()) {
    EXPECT_EQ(batch.sequence(), expected_sequence++);
    EXPECT_LE(batch.kind_size(), 8192);
    EXPECT_GE(batch.drops().ring_full(), ring_full);
    ring_full = batch.drops().ring_full();
  }
  const auto messages = s.collector->Messages();
  ASSERT_TRUE(messages.back().has_goodbye());
  EXPECT_EQ(messages.back().goodbye().events_recorded(), stats.events_recorded);
  EXPECT_EQ(messages.back().goodbye().drops().ring_full(), stats.dropped_ring_full);
}

// A hook's raw records (trainscope_agent.h) reach the collector as operators,
// their ticks mapped with the options' tick mapper, counted like Record's.
TEST(AgentTest, RawRingRecordsArriveMappedInOrderAndCounted) {
  struct HalfNanosecondTicks final : TickMapper {
    TickFit CurrentFit() const override {
      return TickFit{0, 1'000'000'000, uint64_t{1} << (TickFit::kShift - 1)};
    }
  } mapper;
  AgentOptions options = TestOptions();
  options.ring_capacity_events = 1024;  // small: some records may be dropped, all counted
  options.tick_mapper = &mapper;
  Started s = StartFake(options);
  const StringId name = s.agent->Intern("aten::relu");
  constexpr int kThreads = 3;
  constexpr uint64_t kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      const trainscope_raw_ring* ring = s.agent->LocalRawRing();
      ASSERT_NE(ring, nullptr);
      EXPECT_EQ(s.agent->LocalRawRing(), ring);  // the thread's one ring
      // A hook's own bound (its cursor) and the ring's cache of the tail,
      // interleaved on one ring: each stays safe while the other pushes.
      trainscope_raw_cursor cursor = {0};
      for (uint64_t i = 0; i < kPerThread; ++i) {
        ASSERT_TRUE(trainscope_raw_ring_accepts(ring));
        if (i % 3 == 0) {
          trainscope_raw_ring_push_operator(ring, name, 1000 * i, 1000 * i + 20, i + 1,
                                            TRAINSCOPE_SCOPE_BACKWARD);
        } else {
          trainscope_raw_ring_push_operator_at(ring, &cursor, name, 1000 * i, 1000 * i + 20, i + 1,
                                               TRAINSCOPE_SCOPE_BACKWARD);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  s.agent->Shutdown(absl::Seconds(5));
  const AgentStats stats = s.agent->stats();
  ExpectExactAccounting(stats, kThreads * kPerThread);
  EXPECT_EQ(stats.dropped_shutdown, 0u);
  const std::vector<DecodedEvent> events = DecodeAll(*s.collector);
  EXPECT_EQ(events.size(), stats.events_recorded);
  std::map<uint32_t, std::vector<uint64_t>> by_thread;
  for (const DecodedEvent& e : events) {
    ASSERT_EQ(e.kind, EventKind::kOperator);
    EXPECT_EQ(e.name, "aten::relu");
    EXPECT_EQ(e.detail, static_cast<uint32_t>(OperatorScope::kBackward));
    ASSERT_GE(e.value, 1u);
    const int64_t ticks = 1000 * static_cast<int64_t>(e.value - 1);
    EXPECT_EQ(e.start_ns, 1'000'000'000 + ticks / 2);
    EXPECT_EQ(e.end_ns, e.start_ns + 10);
    by_thread[e.thread].push_back(e.value);
  }
  EXPECT_EQ(by_thread.size(), static_cast<size_t>(kThreads));
  for (const auto& [thread, values] : by_thread) {
    for (size_t i = 1; i < values.size(); ++i) ASSERT_LT(values[i - 1], values[i]);
  }
}

TEST(AgentTest, RawRingFollowsTheRecordingSwitchAndSampling) {
  Started s = StartFake();
  const trainscope_raw_ring* ring = s.agent->LocalRawRing();
  ASSERT_NE(ring, nullptr);
  EXPECT_TRUE(trainscope_raw_ring_accepts(ring));
  s.agent->SetRecording(false);
  EXPECT_FALSE(trainscope_raw_ring_accepts(ring));
  s.agent->SetRecording(true);
  s.agent->SetSamplingPeriod(3);
  EXPECT_FALSE(trainscope_raw_ring_accepts(ring));  // sampling is the general path's
  s.agent->SetSamplingPeriod(1);
  EXPECT_TRUE(trainscope_raw_ring_accepts(ring));
  s.agent->Shutdown(absl::Seconds(5));
  EXPECT_FALSE(trainscope_raw_ring_accepts(ring));
}

TEST(AgentTest, DormantRecordsNothingUntilEnabled) {
  AgentOptions options = TestOptions();
  options.start_recording = false;
  Started s = StartFake(options);
  const StringId name = s.agent->Intern("op");
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(s.agent->RecordOperator(name, i, i + 1));
  EXPECT_FALSE(s.agent->RecordStep(1, 5));
  AgentStats stats = s.agent->stats();
  EXPECT_EQ(stats.events_recorded + stats.dropped_ring_full + stats.events_sampled_out, 0u);
  EXPECT_FALSE(stats.recording);

  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  v1::Control enable;
  enable.mutable_set_recording()->set_enabled(true);
  ASSERT_TRUE(s.collector->Send(enable));
  EXPECT_TRUE(s.agent->recording());
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(s.agent->RecordOperator(name, i, i + 1));
  s.agent->Shutdown(absl::Seconds(5));
  stats = s.agent->stats();
  EXPECT_EQ(stats.events_recorded, 100u);
  EXPECT_EQ(stats.events_acked, 100u);
  EXPECT_EQ(DecodeAll(*s.collector).size(), 100u);
  // After Shutdown nothing records, whatever the collector says.
  EXPECT_FALSE(s.agent->RecordOperator(name, 1, 2));
}

TEST(AgentTest, LossReportsTravelInBatchesEvenWhileDormant) {
  AgentOptions options = TestOptions();
  options.start_recording = false;
  Started s = StartFake(options);
  v1::LossReport report;
  report.set_epoch(2);
  report.add_top()->set_item(41);
  EXPECT_TRUE(s.agent->SubmitLossReport(report));
  report.set_epoch(3);
  EXPECT_TRUE(s.agent->SubmitLossReport(report));
  // Over the pending bound: refused and counted, nothing else lost.
  v1::LossReport huge;
  huge.set_selection_layer(std::string(Agent::kMaxPendingLossReportBytes, 'x'));
  EXPECT_FALSE(s.agent->SubmitLossReport(huge));
  s.agent->Shutdown(absl::Seconds(5));
  std::vector<uint32_t> epochs;
  for (const v1::EventBatch& batch : s.collector->Batches()) {
    EXPECT_EQ(batch.kind_size(), 0);  // dormant: reports only
    for (const v1::LossReport& r : batch.loss_reports()) epochs.push_back(r.epoch());
  }
  EXPECT_EQ(epochs, (std::vector<uint32_t>{2, 3}));
  const AgentStats stats = s.agent->stats();
  EXPECT_EQ(stats.loss_reports_submitted, 2u);
  EXPECT_EQ(stats.loss_reports_dropped, 1u);
  // After Shutdown: refused.
  EXPECT_FALSE(s.agent->SubmitLossReport(report));
  EXPECT_EQ(s.agent->stats().loss_reports_dropped, 2u);
}

TEST(AgentTest, CollectorCanDisableRecordingAndSetSampling) {
  Started s = StartFake();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  v1::Control sample;
  sample.mutable_set_recording()->set_enabled(true);
  sample.mutable_set_recording()->set_sampling_period(4);
  ASSERT_TRUE(s.collector->Send(sample));
  const StringId name = s.agent->Intern("op");
  uint64_t attempted = 0;
  for (int i = 0; i < 100; ++i) attempted += s.agent->RecordOperator(name, i, i + 1);
  attempted += s.agent->RecordCounter(name, 5, 200);  // not an operator: never sampled
  v1::Control disable;
  disable.mutable_set_recording()->set_enabled(false);
  ASSERT_TRUE(s.collector->Send(disable));
  EXPECT_FALSE(s.agent->RecordOperator(name, 1, 2));
  s.agent->Shutdown(absl::Seconds(5));
  const AgentStats stats = s.agent->stats();
  EXPECT_EQ(attempted, 101u);
  EXPECT_EQ(stats.events_sampled_out, 75u);
  EXPECT_EQ(stats.events_recorded, 26u);
  ExpectExactAccounting(stats, attempted);
}

TEST(AgentTest, CollectorSwitchesLossContributionApartFromRecording) {
  Started s = StartFake();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  EXPECT_FALSE(s.agent->loss_contribution_switch().has_value());  // the HelloAck had none
  v1::Control off;
  off.mutable_set_loss_contribution()->set_enabled(false);
  ASSERT_TRUE(s.collector->Send(off));
  ASSERT_TRUE(s.agent->loss_contribution_switch().has_value());
  EXPECT_FALSE(s.agent->loss_contribution_switch()->enabled);
  EXPECT_EQ(s.agent->loss_contribution_switch()->serial, 1u);
  EXPECT_TRUE(s.agent->recording());
  // Off again counts as a new switch (the plugin re-applies it over a local change).
  ASSERT_TRUE(s.collector->Send(off));
  EXPECT_EQ(s.agent->loss_contribution_switch()->serial, 2u);
  v1::Control on;
  on.mutable_set_loss_contribution()->set_enabled(true);
  ASSERT_TRUE(s.collector->Send(on));
  EXPECT_TRUE(s.agent->loss_contribution_switch()->enabled);
  EXPECT_EQ(s.agent->loss_contribution_switch()->serial, 3u);
}

TEST(AgentTest, HaltReachesFlagInfoAndCallback) {
  std::atomic<int> calls{0};
  std::string seen_reason;
  AgentOptions options = TestOptions();
  options.on_halt = [&](const HaltInfo& info) {
    seen_reason = info.reason;
    ++calls;
  };
  Started s = StartFake(options);
  EXPECT_FALSE(s.agent->halt_requested());
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  v1::Control halt;
  halt.mutable_halt()->set_halt_id(9);
  halt.mutable_halt()->set_reason("straggler on rank 3");
  halt.mutable_halt()->set_requested_by("alice");
  ASSERT_TRUE(s.collector->Send(halt));
  EXPECT_TRUE(s.agent->halt_requested());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(seen_reason, "straggler on rank 3");
  auto info = s.agent->halt_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->halt_id, 9u);
  EXPECT_EQ(info->requested_by, "alice");
  EXPECT_TRUE(s.agent->stats().halt_requested);
}

TEST(AgentTest, AnswersProbes) {
  Started s = StartFake();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  v1::Control probe;
  probe.mutable_probe()->set_probe_id(42);
  const int64_t before = Agent::Now();
  ASSERT_TRUE(s.collector->Send(probe));
  const v1::ProbeReply* reply = nullptr;
  std::vector<v1::AgentMessage> messages;
  ASSERT_TRUE(WaitFor([&] {
    messages = s.collector->Messages();
    for (const auto& m : messages) {
      if (m.has_probe_reply()) reply = &m.probe_reply();
    }
    return reply != nullptr;
  }));
  EXPECT_EQ(reply->probe_id(), 42u);
  EXPECT_EQ(reply->clock_domain(), "monotonic");
  EXPECT_GE(reply->agent_receive_ns(), before);
  EXPECT_GE(reply->agent_send_ns(), reply->agent_receive_ns());
}

TEST(AgentTest, ResendsUnacknowledgedBatchesAfterReconnect) {
  Started s = StartFake();
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->auto_ack = false;
  }
  const StringId name = s.agent->Intern("op");
  for (int i = 0; i < 100; ++i) s.agent->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return !s.collector->Batches().empty(); }));
  const uint64_t first_sequence = s.collector->Batches().front().sequence();
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->auto_ack = true;
  }
  s.collector->Break();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().reconnects == 1; }));
  s.agent->Shutdown(absl::Seconds(5));
  const AgentStats stats = s.agent->stats();
  EXPECT_EQ(stats.events_acked, 100u);
  ExpectExactAccounting(stats, 100);
  // The first batch went out twice, once per stream.
  int copies = 0;
  for (const auto& batch : s.collector->Batches()) copies += batch.sequence() == first_sequence;
  EXPECT_EQ(copies, 2);
}

TEST(AgentTest, HelloAckResumeCountsHeldBatchesAsAcked) {
  Started s = StartFake();
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->auto_ack = false;
  }
  const StringId name = s.agent->Intern("op");
  for (int i = 0; i < 50; ++i) s.agent->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return !s.collector->Batches().empty(); }));
  const uint64_t last = s.collector->Batches().back().sequence();
  uint64_t events_through_last = 0;
  for (const auto& batch : s.collector->Batches()) events_through_last += batch.kind_size();
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->resume_after = last;  // the collector has these durably already
  }
  s.collector->Break();
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().events_acked == events_through_last; }));
  EXPECT_EQ(s.agent->stats().batches_acked, last);
  s.agent->Shutdown(absl::Milliseconds(100));
  ExpectExactAccounting(s.agent->stats(), 50);
}

// Issue 21: the agent ignored HelloAck.max_message_bytes; every oversized
// write cut the stream and nothing was ever acknowledged. Batches queued
// before the HelloAck (cut for the default limit) are cut again and
// renumbered; later ones are cut as they are made.
TEST(AgentTest, BatchesFitTheCollectorsMessageLimit) {
  AgentOptions options = TestOptions();
  options.memory_budget_bytes = 256u << 20;
  Started s;
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->ready = false;  // queue while the collector is away
    s.collector->max_message_bytes = 4096;
  }
  auto agent =
      Agent::StartWithTransport(std::move(options), std::make_unique<FakeTransport>(s.collector));
  ASSERT_TRUE(agent.ok()) << agent.status();
  s.agent = *std::move(agent);
  std::vector<StringId> names;
  for (int i = 0; i < 64; ++i) names.push_back(s.agent->Intern("op_" + std::to_string(i)));
  constexpr int kEvents = 12000;
  for (int i = 0; i < kEvents / 2; ++i) s.agent->RecordOperator(names[i % 64], i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().events_recorded == kEvents / 2; }));
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->ready = true;
  }
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().connected; }));
  for (int i = kEvents / 2; i < kEvents; ++i) s.agent->RecordOperator(names[i % 64], i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().events_acked == kEvents; }));
  s.agent->Shutdown(absl::Seconds(5));

  const AgentStats stats = s.agent->stats();
  ExpectExactAccounting(stats, kEvents);
  EXPECT_EQ(stats.dropped_ring_full + stats.dropped_buffer_full, 0u);
  EXPECT_EQ(stats.reconnects, 0u);
  {
    base::MutexLock lock(&s.collector->mu);
    EXPECT_EQ(s.collector->oversized, 0);
    EXPECT_EQ(s.collector->opens, 1);
  }
  const std::vector<v1::EventBatch> batches = s.collector->Batches();
  ASSERT_GT(batches.size(), 10u);
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(batches[i].sequence(), i + 1);  // contiguous, as the collector requires
  }
  const std::vector<DecodedEvent> events = DecodeAll(*s.collector);
  ASSERT_EQ(events.size(), static_cast<size_t>(kEvents));
  for (int i = 0; i < kEvents; ++i) {
    ASSERT_EQ(events[i].start_ns, i) << i;
    ASSERT_EQ(events[i].name, "op_" + std::to_string(i % 64)) << i;
  }
}

TEST(AgentTest, RefusedBatchesAreCounted) {
  Started s = StartFake();
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->reject = {1};
  }
  const StringId name = s.agent->Intern("op");
  for (int i = 0; i < 10; ++i) s.agent->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return s.agent->stats().events_refused > 0; }));
  for (int i = 0; i < 10; ++i) s.agent->RecordOperator(name, i, i + 1, i);
  s.agent->Shutdown(absl::Seconds(5));
  const AgentStats stats = s.agent->stats();
  EXPECT_EQ(stats.events_refused, static_cast<uint64_t>(s.collector->Batches()[0].kind_size()));
  EXPECT_GT(stats.events_acked, 0u);
  ExpectExactAccounting(stats, 20);
}

// The collector never acknowledges: memory stays bounded, the newest records
// are dropped, and after Shutdown every record is accounted for.
TEST(AgentTest, UnacknowledgedBacklogIsBoundedAndCounted) {
  AgentOptions options = TestOptions();
  options.memory_budget_bytes = 256 << 10;
  options.ring_capacity_events = 1024;
  Started s = StartFake(options);
  {
    base::MutexLock lock(&s.collector->mu);
    s.collector->auto_ack = false;
  }
  const StringId name = s.agent->Intern("op");
  uint64_t attempted = 0;
  for (int i = 0; i < 200000; ++i) attempted += s.agent->RecordOperator(name, i, i + 1, i);
  s.agent->Shutdown(absl::Milliseconds(100));
  const AgentStats stats = s.agent->stats();
  ExpectExactAccounting(stats, attempted);
  EXPECT_EQ(stats.events_acked, 0u);
  EXPECT_GT(stats.dropped_ring_full, 0u);
  EXPECT_GT(stats.dropped_shutdown, 0u);
  // What was still held at the end fits the budget: a ring slot is 48 bytes,
  // a queued event (serialized) at least 7, one byte for each of its columns.
  EXPECT_LT(stats.dropped_shutdown, (256u << 10) / 7);
}

TEST(AgentTest, NoCollectorShutdownMeetsDeadlineAndCountsEverything) {
  AgentOptions options = TestOptions();
  options.collector_address = "127.0.0.1:" + std::to_string(ClosedPort());
  options.memory_budget_bytes = 1 << 20;
  auto agent = Agent::Start(options);
  ASSERT_TRUE(agent.ok()) << agent.status();
  const StringId name = (*agent)->Intern("op");
  uint64_t attempted = 0;
  for (int i = 0; i < 100000; ++i) attempted += (*agent)->RecordOperator(name, i, i + 1, i);
  const absl::Time start = absl::Now();
  (*agent)->Shutdown(absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Milliseconds(300) + absl::Seconds(2));  // only catches a hang
  const AgentStats stats = (*agent)->stats();
  EXPECT_FALSE(stats.connected);
  EXPECT_EQ(stats.events_acked, 0u);
  EXPECT_EQ(attempted, 100000u);
  ExpectExactAccounting(stats, attempted);
  EXPECT_GT(stats.dropped_shutdown, 0u);
}

TEST(AgentTest, OneThreadRecordsIntoSeveralAgents) {
  Started a = StartFake();
  Started b = StartFake();
  const StringId name_a = a.agent->Intern("a");
  const StringId name_b = b.agent->Intern("b");
  for (int i = 0; i < 1000; ++i) {
    a.agent->RecordOperator(name_a, i, i + 1, i);
    if (i % 2 == 0) b.agent->RecordOperator(name_b, i, i + 1, i);
  }
  a.agent->Shutdown(absl::Seconds(5));
  b.agent->Shutdown(absl::Seconds(5));
  EXPECT_EQ(a.agent->stats().events_acked, 1000u);
  EXPECT_EQ(b.agent->stats().events_acked, 500u);
  for (const auto& e : DecodeAll(*b.collector)) EXPECT_EQ(e.name, "b");
  a.agent.reset();
  b.agent.reset();
  // A new Agent (perhaps at a freed one's address) gets its own ring.
  Started c = StartFake();
  for (int i = 0; i < 10; ++i) c.agent->RecordStep(i, i);
  c.agent->Shutdown(absl::Seconds(5));
  EXPECT_EQ(c.agent->stats().events_acked, 10u);
}

TEST(AgentTest, StartNamesTheBadField) {
  const auto error = [](auto mutate) {
    AgentOptions options = TestOptions();
    mutate(options);
    auto agent = Agent::Start(options);
    EXPECT_FALSE(agent.ok());
    return agent.ok() ? std::string() : std::string(agent.status().message());
  };
  EXPECT_NE(error([](AgentOptions& o) { o.job_id = ""; }).find("job_id"), std::string::npos);
  EXPECT_NE(error([](AgentOptions& o) { o.job_id = "a b"; }).find("job_id"), std::string::npos);
  EXPECT_NE(error([](AgentOptions& o) { o.rank = 4; }).find("rank 4"), std::string::npos);
  EXPECT_NE(error([](AgentOptions& o) { o.world_size = 0; }).find("world_size"), std::string::npos);
  EXPECT_NE(
      error([](AgentOptions& o) { o.collector_address = "localhost"; }).find("collector_address"),
      std::string::npos);
  EXPECT_NE(
      error([](AgentOptions& o) { o.collector_address = "h:99999"; }).find("collector_address"),
      std::string::npos);
  EXPECT_NE(
      error([](AgentOptions& o) { o.memory_budget_bytes = 1000; }).find("memory_budget_bytes"),
      std::string::npos);
  EXPECT_NE(error([](AgentOptions& o) { o.ring_capacity_events = 2; }).find("ring_capacity_events"),
            std::string::npos);
  EXPECT_NE(
      error([](AgentOptions& o) { o.reconnect_max = absl::Milliseconds(1); }).find("reconnect_max"),
      std::string::npos);
}

}  // namespace
}  // namespace trainscope::agent
