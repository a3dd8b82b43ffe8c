#include "synthetic_clock_job.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace trainscope::collector {
namespace {

constexpr int64_t kUptimeNs = 5'000'000'000'000;  // every device booted ~83 min ago
constexpr int64_t kWarmupNs = 1'000'000'000;
constexpr int64_t kCollectiveNs = 2'000'000;
constexpr int64_t kLaunchNs = 300'000;  // a collective's CPU record when it only launches

}  // namespace

SyntheticClockJob::SyntheticClockJob(const Config& config, JobStrings* strings)
    : config_(config), strings_(strings), rng_(config.seed) {
  if (config_.layout == Layout::kPipeline) config_.world_size = 4;
  const uint32_t n = config_.world_size;
  std::uniform_real_distribution<double> offset(-config_.max_offset_ns, config_.max_offset_ns);
  std::uniform_real_distribution<double> drift(-config_.max_drift_ppm, config_.max_drift_ppm);
  for (uint32_t r = 0; r < n; ++r) {
    offset_ns_.push_back(std::llround(offset(rng_)));
    drift_ppm_.push_back(drift(rng_));
  }
  // Drawn for every rank first, so a job with hosts sees the same draws.
  for (uint32_t r = 0; r < n && r < config_.host.size(); ++r) {
    if (config_.host[r] < 0) continue;
    for (uint32_t first = 0; first < r; ++first) {
      if (config_.host[first] == config_.host[r]) {
        offset_ns_[r] = offset_ns_[first];
        drift_ppm_[r] = drift_ppm_[first];
        break;
      }
    }
  }
  streams_.resize(n);
  cursor_.assign(n, 0);
  eval_times_.resize(config_.iterations);
  switch (config_.layout) {
    case Layout::kDataParallel:
      BuildDataParallel();
      break;
    case Layout::kPipeline:
      BuildPipeline();
      break;
    case Layout::kProbesOnly:
      for (int k = 0; k < config_.iterations; ++k) {
        const int64_t t = kStartUnixNs + kWarmupNs + k * config_.iteration_ns;
        eval_times_[k] = {t, t + config_.iteration_ns / 2};
      }
      break;
  }
  BuildProbes();
  // A rank's events reach the collector in the order they completed.
  for (auto& stream : streams_) {
    std::stable_sort(stream.begin(), stream.end(), [](const Item& a, const Item& b) {
      const int64_t ta = a.probe ? a.agent_send : a.event.end_ns;
      const int64_t tb = b.probe ? b.agent_send : b.event.end_ns;
      return ta < tb;
    });
  }
}

int64_t SyntheticClockJob::Local(uint32_t rank, int64_t true_ns) const {
  const int64_t since = true_ns - kStartUnixNs;
  int64_t local = kUptimeNs + since + offset_ns_[rank] +
                  std::llround(drift_ppm_[rank] * 1e-6 * static_cast<double>(since));
  if (static_cast<int>(rank) == config_.jump_rank &&
      true_ns >= kStartUnixNs + kWarmupNs + config_.jump_iteration * config_.iteration_ns) {
    local += config_.jump_ns;
  }
  return local;
}

std::string SyntheticClockJob::Domain(uint32_t rank) const {
  if (rank >= config_.host.size() || config_.host[rank] < 0) return "";
  return "host-" + std::to_string(config_.host[rank]);
}

void SyntheticClockJob::DeclareDomains(ClockAligner* aligner) const {
  for (uint32_t r = 0; r < config_.world_size; ++r) aligner->SetClockDomain(r, Domain(r));
}

bool SyntheticClockJob::Alive(uint32_t rank, int iteration) const {
  return static_cast<int>(rank) != config_.dead_rank || iteration <= config_.dead_after;
}

int64_t SyntheticClockJob::Jitter() {
  std::normal_distribution<double> normal(0, config_.jitter_ns);
  std::uniform_real_distribution<double> unit(0, 1);
  double j = std::fabs(normal(rng_));
  if (unit(rng_) < config_.late_wakeup_probability) j += 100'000 + 400'000 * unit(rng_);
  return std::llround(j);
}

void SyntheticClockJob::AddEvent(uint32_t rank, int iteration, int64_t true_start, int64_t true_end,
                                 v1::EventKind kind, uint32_t detail, uint32_t group,
                                 uint64_t sequence, int32_t peer) {
  if (!Alive(rank, iteration)) return;
  Item item;
  item.iteration = iteration;
  item.event.start_ns = Local(rank, true_start);
  item.event.end_ns = Local(rank, true_end);
  item.event.kind = kind;
  item.event.detail = detail;
  item.event.group = group;
  item.event.group_sequence = sequence;
  item.event.peer = peer;
  item.event.name = strings_->Intern(kind == v1::EVENT_KIND_OPERATOR         ? "aten::mm"
                                     : kind == v1::EVENT_KIND_GPU_COLLECTIVE ? "ncclDevKernel"
                                                                             : "comm");
  streams_[rank].push_back(item);
}

void SyntheticClockJob::AddOperators(uint32_t rank, int iteration, int64_t from, int64_t to,
                                     int count) {
  if (count <= 0 || to <= from) return;
  const int64_t each = (to - from) / count;
  for (int i = 0; i < count; ++i) {
    const size_t before = streams_[rank].size();
    AddEvent(rank, iteration, from + i * each, from + (i + 1) * each - 1, v1::EVENT_KIND_OPERATOR,
             1, 0, 0, -1);
    if (streams_[rank].size() > before) streams_[rank].back().event.value = i;
  }
}

void SyntheticClockJob::BuildDataParallel() {
  // Without a probe-only rank the default group; else a group of the others.
  std::string name = "pg:dp[";
  for (uint32_t r = 0; r < config_.world_size; ++r) {
    if (static_cast<int>(r) == config_.probe_only_rank) continue;
    if (name.back() != '[') name += ',';
    name += std::to_string(r);
  }
  const uint32_t world = strings_->Intern(config_.probe_only_rank >= 0 ? name + "]" : "");
  std::uniform_real_distribution<double> wobble(-1e6, 1e6);
  for (int k = 0; k < config_.iterations; ++k) {
    const int64_t t = kStartUnixNs + kWarmupNs + k * config_.iteration_ns;
    std::vector<int64_t> arrival(config_.world_size);
    int64_t last = t;
    for (uint32_t r = 0; r < config_.world_size; ++r) {
      arrival[r] = t + config_.iteration_ns * 6 / 10 + std::llround(wobble(rng_)) +
                   (static_cast<int>(r) == config_.straggler ? config_.straggler_delay_ns : 0);
      if (Alive(r, k) && static_cast<int>(r) != config_.probe_only_rank) {
        last = std::max(last, arrival[r]);
      }
    }
    const int64_t end = last + kCollectiveNs;
    for (uint32_t r = 0; r < config_.world_size; ++r) {
      AddOperators(r, k, t, arrival[r], config_.operators_per_collective);
      if (static_cast<int>(r) == config_.probe_only_rank) continue;
      if (!config_.gpu_collectives) {
        AddEvent(r, k, arrival[r], end + Jitter(), v1::EVENT_KIND_COLLECTIVE,
                 v1::COLLECTIVE_KIND_ALL_REDUCE, world, k, -1);
        continue;
      }
      // The CPU record returns once the kernel is queued; the kernel ends
      // when the last rank's data is in.
      AddEvent(r, k, arrival[r], arrival[r] + kLaunchNs, v1::EVENT_KIND_COLLECTIVE,
               v1::COLLECTIVE_KIND_ALL_REDUCE, world, k, -1);
      std::normal_distribution<double> gpu_jitter(0, config_.gpu_jitter_ns);
      AddEvent(r, k, arrival[r] + kLaunchNs, end + std::llround(std::fabs(gpu_jitter(rng_))),
               v1::EVENT_KIND_GPU_COLLECTIVE, v1::COLLECTIVE_KIND_ALL_REDUCE, world, k, -1);
    }
    eval_times_[k] = {t, t + config_.iteration_ns / 2, end};
  }
}

void SyntheticClockJob::BuildPipeline() {
  // Stage 0 = {0, 2}, stage 1 = {1, 3}; replicas 0 -> 1 and 2 -> 3.
  const uint32_t dp[2] = {strings_->Intern("pg:dp0[0,2]"), strings_->Intern("pg:dp1[1,3]")};
  const uint32_t pp[2] = {strings_->Intern("pg:pp0[0,1]"), strings_->Intern("pg:pp1[2,3]")};
  constexpr int kMicrobatches = 4;
  const int64_t fwd = config_.iteration_ns / 25, bwd = config_.iteration_ns * 3 / 50;
  std::exponential_distribution<double> exp_jitter(1.0 / std::max(config_.p2p_jitter_ns, 1.0));
  auto latency = [&] { return config_.p2p_latency_ns + std::llround(exp_jitter(rng_)); };
  const int ops = std::max(config_.operators_per_collective / (4 * kMicrobatches), 1);
  for (int k = 0; k < config_.iterations; ++k) {
    const int64_t t = kStartUnixNs + kWarmupNs + k * config_.iteration_ns;
    int64_t done[4] = {t, t, t, t};
    for (int replica = 0; replica < 2; ++replica) {
      const uint32_t a = 2 * replica, b = 2 * replica + 1;
      const uint32_t g = pp[replica];
      int64_t ta = t, tb = t;
      for (int m = 0; m < kMicrobatches; ++m) {
        AddOperators(a, k, ta, ta + fwd, ops);
        ta += fwd;
        const int64_t recv_end = std::max(ta, tb) + latency();
        const uint64_t seq = static_cast<uint64_t>(k) * kMicrobatches + m;
        AddEvent(a, k, ta, recv_end, v1::EVENT_KIND_COLLECTIVE, v1::COLLECTIVE_KIND_SEND, g, seq,
                 b);
        AddEvent(b, k, tb, recv_end, v1::EVENT_KIND_COLLECTIVE, v1::COLLECTIVE_KIND_RECV, g, seq,
                 a);
        ta = recv_end;
        AddOperators(b, k, recv_end, recv_end + fwd, ops);
        tb = recv_end + fwd;
      }
      for (int m = 0; m < kMicrobatches; ++m) {
        AddOperators(b, k, tb, tb + bwd, ops);
        tb += bwd;
        const int64_t recv_end = std::max(ta, tb) + latency();
        const uint64_t seq = static_cast<uint64_t>(k) * kMicrobatches + m;
        AddEvent(b, k, tb, recv_end, v1::EVENT_KIND_COLLECTIVE, v1::COLLECTIVE_KIND_SEND, g, seq,
                 a);
        AddEvent(a, k, ta, recv_end, v1::EVENT_KIND_COLLECTIVE, v1::COLLECTIVE_KIND_RECV, g, seq,
                 b);
        tb = recv_end;
        AddOperators(a, k, recv_end, recv_end + bwd, ops);
        ta = recv_end + bwd;
      }
      done[a] = ta;
      done[b] = tb;
    }
    std::vector<int64_t> ends;
    for (int stage = 0; stage < 2; ++stage) {
      const uint32_t r0 = stage, r1 = stage + 2;
      const int64_t end = std::max(done[r0], done[r1]) + kCollectiveNs;
      for (uint32_t r : {r0, r1}) {
        AddEvent(r, k, done[r], end + Jitter(), v1::EVENT_KIND_COLLECTIVE,
                 v1::COLLECTIVE_KIND_ALL_REDUCE, dp[stage], k, -1);
      }
      ends.push_back(end);
    }
    eval_times_[k] = {t, t + config_.iteration_ns / 2, ends[0], ends[1]};
  }
}

void SyntheticClockJob::BuildProbes() {
  if (config_.probe_period_ns <= 0) return;
  std::exponential_distribution<double> exp_jitter(1.0 / std::max(config_.probe_jitter_ns, 1.0));
  const int64_t first = kStartUnixNs + kWarmupNs;
  const int64_t last = first + config_.iterations * config_.iteration_ns;
  for (uint32_t r = 0; r < config_.world_size; ++r) {
    for (int64_t send = first + r * 1'000'000; send < last; send += config_.probe_period_ns) {
      const int k = static_cast<int>((send - first) / config_.iteration_ns);
      if (!Alive(r, k)) continue;
      const int64_t arrive = send + config_.probe_one_way_ns + std::llround(exp_jitter(rng_));
      const int64_t reply = arrive + 20'000;
      const int64_t back = reply + config_.probe_one_way_ns + std::llround(exp_jitter(rng_));
      Item item;
      item.iteration = k;
      item.probe = true;
      item.probe_send_unix = send;
      item.agent_receive = Local(r, arrive);
      item.agent_send = Local(r, reply);
      item.probe_receive_unix = back;
      streams_[r].push_back(item);
    }
  }
}

void SyntheticClockJob::Feed(uint32_t rank, const Item& item, ClockAligner* aligner) const {
  if (item.probe) {
    aligner->AddProbe(rank, item.probe_send_unix, item.agent_receive, item.agent_send,
                      item.probe_receive_unix);
  } else {
    aligner->Add(rank, item.event);
  }
}

void SyntheticClockJob::FeedRankThrough(uint32_t rank, int iteration, ClockAligner* aligner) {
  const auto& stream = streams_[rank];
  size_t& c = cursor_[rank];
  while (c < stream.size() && stream[c].iteration <= iteration) Feed(rank, stream[c++], aligner);
}

void SyntheticClockJob::FeedThrough(int iteration, ClockAligner* aligner, int max_batch) {
  std::vector<uint32_t> pending;
  for (uint32_t r = 0; r < streams_.size(); ++r) pending.push_back(r);
  std::uniform_int_distribution<int> batch(1, std::max(max_batch, 1));
  while (!pending.empty()) {
    const size_t pick = std::uniform_int_distribution<size_t>(0, pending.size() - 1)(rng_);
    const uint32_t r = pending[pick];
    const auto& stream = streams_[r];
    size_t& c = cursor_[r];
    for (int n = batch(rng_); n > 0 && c < stream.size() && stream[c].iteration <= iteration; --n) {
      Feed(r, stream[c++], aligner);
    }
    if (c == stream.size() || stream[c].iteration > iteration) {
      pending.erase(pending.begin() + static_cast<ptrdiff_t>(pick));
    }
  }
}

}  // namespace trainscope::collector
