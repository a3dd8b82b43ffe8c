// Cost of the agent's hot path, Agent::Record*, per event.
//
//   BM_RecordOperator_Recording: recording into the default 16384-event ring;
//     after each chunk of 4096 records the timer pauses until the sender has
//     drained the ring, so the ring never fills (no drop path) and stays
//     cache-warm as in a real process.
//   BM_RecordOperator_Recording/threads:2: two producer threads, own rings.
//   BM_RecordOperator_Dormant: agent loaded, not recording.
//   BM_SpscRing_Push: the bare ring push (ring reused, cache-warm), for reference.
// time_per_event is CPU time per Record call. The transport acknowledges every
// batch at once, so only the agent is measured.
// Budget: <= 25 ns per recorded event (Tracy: 2.25 ns per zone).
#include <cstdlib>
#include <memory>

#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "spsc_ring.h"
#include "trainscope/agent/agent.h"
#include "transport.h"

namespace trainscope::agent {
namespace {

constexpr int kChunk = 4096;

// Acknowledges every batch as it is written.
class AckingTransport : public Transport {
 public:
  bool ReadyToOpen(absl::Duration) override { return true; }
  absl::Status Open(ControlListener* listener) override {
    listener_ = listener;
    return absl::OkStatus();
  }
  bool Write(const v1::AgentMessage& message) override {
    v1::Control reply;
    if (message.has_hello()) {
      reply.mutable_hello_ack()->set_recording(message.hello().recording());
    } else if (message.has_batch()) {
      reply.mutable_ack()->set_up_to_sequence(message.batch().sequence());
    } else {
      return true;
    }
    listener_->OnControl(reply, Agent::Now());
    return true;
  }
  absl::Status Close(absl::Duration) override { return absl::OkStatus(); }
  void Cancel() override {}

 private:
  ControlListener* listener_ = nullptr;
};

std::unique_ptr<Agent> MakeAgent(bool recording) {
  AgentOptions options;
  options.job_id = "bench";
  options.start_recording = recording;
  options.flush_interval = absl::Milliseconds(1);
  options.log_to_stderr = false;
  auto agent = Agent::StartWithTransport(options, std::make_unique<AckingTransport>());
  if (!agent.ok()) std::abort();
  return *std::move(agent);
}

Agent& RecordingAgent() {
  static Agent* agent = MakeAgent(true).release();
  return *agent;
}

Agent& DormantAgent() {
  static Agent* agent = MakeAgent(false).release();
  return *agent;
}

// Untimed: lets the sender empty the rings left by an earlier run.
void WaitUntilDrained(Agent& agent) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    const AgentStats stats = agent.stats();
    if (stats.events_acked == stats.events_recorded) return;
    absl::SleepFor(absl::Milliseconds(1));
  }
}

void RecordLoop(benchmark::State& state, Agent& agent, bool drain) {
  const StringId name = agent.Intern("aten::conv2d");
  int64_t t = Agent::Now();
  uint64_t sequence = 0;
  // This thread's first record makes its ring: keep that out of the timing.
  agent.RecordOperator(name, t, t, sequence++, OperatorScope::kForward);
  WaitUntilDrained(agent);
  for (auto _ : state) {
    for (int i = 0; i < kChunk; ++i) {
      benchmark::DoNotOptimize(
          agent.RecordOperator(name, t, t + 100, sequence++, OperatorScope::kForward));
      t += 100;
    }
    if (drain) {
      state.PauseTiming();
      WaitUntilDrained(agent);
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * kChunk);
  state.counters["time_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChunk,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_RecordOperator_Recording(benchmark::State& state) {
  RecordLoop(state, RecordingAgent(), /*drain=*/true);
  if (state.thread_index() == 0) {
    state.counters["dropped"] = static_cast<double>(RecordingAgent().stats().dropped_ring_full);
  }
}
BENCHMARK(BM_RecordOperator_Recording)->Repetitions(3);
BENCHMARK(BM_RecordOperator_Recording)->Threads(2)->Repetitions(3);

void BM_RecordOperator_Dormant(benchmark::State& state) {
  RecordLoop(state, DormantAgent(), /*drain=*/false);
}
BENCHMARK(BM_RecordOperator_Dormant)->Repetitions(3);

void BM_SpscRing_Push(benchmark::State& state) {
  SpscRing<EventRecord> ring(16384);
  EventRecord record;
  for (auto _ : state) {
    for (int i = 0; i < kChunk; ++i) {
      benchmark::DoNotOptimize(ring.TryPush(record));
      ++record.start_ns;
    }
    ring.Consume(kChunk, [](const EventRecord& r) { benchmark::DoNotOptimize(r.start_ns); });
  }
  state.counters["time_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChunk,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SpscRing_Push)->Repetitions(3);

}  // namespace
}  // namespace trainscope::agent

BENCHMARK_MAIN();
