// trainscope-loadgen: simulated training processes for integration tests and
// benchmarks (usage: loadgen_flags.h).
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "loadgen_flags.h"
#include "pacer.h"
#include "trainscope/agent/agent.h"
#include "trainscope/proto/protocol.h"
#include "workload.h"

namespace trainscope::loadgen {
namespace {

using agent::Agent;
using agent::AgentOptions;
using agent::AgentStats;

// One simulated rank: an Agent and its producer threads.
struct Stream {
  uint32_t rank = 0;
  std::unique_ptr<Agent> agent;
  std::atomic<uint64_t> attempted{0};
  std::atomic<uint64_t> names_interned{0};
  std::atomic<uint64_t> names_over_agent_cap{0};
  std::atomic<uint64_t> pacing_slips{0};
  absl::Time start;
  absl::Duration elapsed;
  AgentStats stats;
};

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Records `calls` Record calls (or until `stop_at`), paced to `rate` per second
// (Pacer: a starved producer does not catch up in a burst).
void Produce(Stream& stream, Workload::Role role, DistinctNames distinct, uint64_t calls,
             absl::Time stop_at, double rate) {
  Workload workload(stream.agent.get(), role, distinct);
  const absl::Time start = absl::Now();
  Pacer pacer(rate, start);
  absl::Time next_refusal_check = start;
  uint64_t attempted = 0;
  for (uint64_t i = 0; i < calls; ++i) {
    attempted += workload.Next();
    if (rate > 0) {
      const absl::Time now = absl::Now();
      const absl::Duration wait = pacer.Wait(now);
      if (wait > absl::ZeroDuration()) absl::SleepFor(std::min(wait, stop_at - now));
    }
    if ((i & 63) == 63) {
      const absl::Time now = absl::Now();
      if (stream.agent->halt_requested() || now >= stop_at) break;
      // A collector that refused the stream for good will refuse it again:
      // stop producing (checked a few times a second, stats() sums rings).
      if (now >= next_refusal_check) {
        next_refusal_check = now + absl::Milliseconds(200);
        if (!stream.agent->stats().refusal.empty()) break;
      }
    }
  }
  stream.attempted += attempted;
  stream.pacing_slips += pacer.slips();
  stream.names_interned += workload.names_interned();
  stream.names_over_agent_cap += workload.CountNamesOverAgentCap();
}

// Producer `p` of `producers` takes names p, p + producers, ...: every name
// goes to exactly one producer.
DistinctNames ShareOfNames(uint64_t names, uint64_t p, uint64_t producers) {
  DistinctNames share;
  if (names == 0) return share;
  share.first = p;
  share.stride = producers;
  share.count = names / producers + (p < names % producers);
  // More producers than names: this one has none, so it keeps the fixed list.
  return share;
}

int Run(const LoadgenFlags& flags) {
  std::vector<std::unique_ptr<Stream>> streams;
  for (uint32_t k = 0; k < flags.streams; ++k) {
    AgentOptions options;
    options.collector_address = flags.collector;
    options.job_id = flags.job;
    options.job_token = flags.token;
    options.rank = flags.rank + k;
    options.world_size = flags.world_size;
    options.local_rank = k;
    options.restart_count = flags.restart_count;
    options.framework = "loadgen";
    options.framework_version = kTrainscopeVersion;
    options.start_recording = !flags.dormant;
    options.test_clock_offset_ns = flags.clock_offset_ms * 1'000'000;
    options.memory_budget_bytes = flags.memory_mb << 20;
    options.shutdown_deadline = absl::Milliseconds(static_cast<int64_t>(flags.flush_timeout_ms));
    auto agent = Agent::Start(options);
    if (!agent.ok()) {
      std::cerr << "trainscope-loadgen: " << agent.status().message() << "\n";
      return 2;
    }
    auto stream = std::make_unique<Stream>();
    stream->rank = options.rank;
    stream->agent = *std::move(agent);
    streams.push_back(std::move(stream));
  }

  const bool timed = flags.run_for_ms > 0;
  const absl::Time stop_at =
      timed ? absl::Now() + absl::Milliseconds(flags.run_for_ms) : absl::InfiniteFuture();
  std::vector<std::thread> producers;
  const uint64_t producer_count = static_cast<uint64_t>(flags.streams) * flags.threads;
  for (auto& stream : streams) {
    stream->start = absl::Now();
    for (uint32_t t = 0; t < flags.threads; ++t) {
      const DistinctNames distinct =
          ShareOfNames(flags.distinct_names, producers.size(), producer_count);
      uint64_t calls = UINT64_MAX;
      if (!timed) calls = flags.events / flags.threads + (t < flags.events % flags.threads);
      const auto role = t == 0 ? Workload::Role::kMain : Workload::Role::kHelper;
      producers.emplace_back(Produce, std::ref(*stream), role, distinct, calls, stop_at,
                             flags.rate / flags.threads);
    }
  }
  for (auto& producer : producers) producer.join();

  // Shut the streams down side by side: each waits at most the flush timeout.
  std::vector<std::thread> closers;
  for (auto& stream : streams) {
    closers.emplace_back([&stream, &flags] {
      stream->agent->Shutdown(absl::Milliseconds(static_cast<int64_t>(flags.flush_timeout_ms)));
      stream->elapsed = absl::Now() - stream->start;
      stream->stats = stream->agent->stats();
    });
  }
  for (auto& closer : closers) closer.join();

  std::string halt_reason;
  bool halted = false;
  std::ostringstream out;
  for (auto& stream : streams) {
    const AgentStats& s = stream->stats;
    const bool stream_halted = stream->agent->halt_requested();
    if (stream_halted && !halted) {
      halted = true;
      if (auto info = stream->agent->halt_info()) halt_reason = info->reason;
    }
    out << "{\"job\":" << JsonString(flags.job) << ",\"rank\":" << stream->rank
        << ",\"attempted\":" << stream->attempted.load() << ",\"recorded\":" << s.events_recorded
        << ",\"acked\":" << s.events_acked << ",\"refused\":" << s.events_refused
        << ",\"dropped_ring_full\":" << s.dropped_ring_full
        << ",\"dropped_buffer_full\":" << s.dropped_buffer_full
        << ",\"dropped_shutdown\":" << s.dropped_shutdown
        << ",\"sampled_out\":" << s.events_sampled_out << ",\"batches_acked\":" << s.batches_acked
        << ",\"reconnects\":" << s.reconnects
        << ",\"pacing_slips\":" << stream->pacing_slips.load();
    if (flags.distinct_names > 0) {
      out << ",\"names_interned\":" << stream->names_interned.load()
          << ",\"names_over_agent_cap\":" << stream->names_over_agent_cap.load();
    }
    out << ",\"elapsed_s\":" << absl::ToDoubleSeconds(stream->elapsed)
        << ",\"halted\":" << (stream_halted ? "true" : "false") << "}\n";
  }
  if (halted) std::cout << "halted: " << halt_reason << std::endl;
  // Streams the collector refused for good (it logged why once per stream):
  // said again here, last, and the exit status tells a script.
  bool refused = false;
  for (auto& stream : streams) {
    if (stream->stats.refusal.empty()) continue;
    refused = true;
    std::cerr << "trainscope-loadgen: job " << flags.job << " rank " << stream->rank
              << ": the collector refused the stream: " << stream->stats.refusal << "\n";
  }
  if (flags.summary.empty()) {
    std::cout << out.str() << std::flush;
  } else {
    std::ofstream file(flags.summary, std::ios::trunc);
    file << out.str();
    file.close();
    if (!file) {
      std::cerr << "trainscope-loadgen: --summary " << flags.summary << ": could not write\n";
      return 1;
    }
  }
  if (refused) return 4;
  return halted ? 3 : 0;
}

}  // namespace
}  // namespace trainscope::loadgen

int main(int argc, char** argv) {
  auto flags = trainscope::loadgen::ParseLoadgenFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "trainscope-loadgen: " << flags.status().message() << "\n";
    return 2;
  }
  if (flags->help) {
    std::cout << trainscope::loadgen::LoadgenUsage();
    return 0;
  }
  return trainscope::loadgen::Run(*flags);
}
