// Maps CUPTI's timestamps onto the agent's clock (CLOCK_MONOTONIC).
//
// Usage:
//   GpuClockMap clock;
//   sampler (start, then every flush period):
//     clock.AddSample(Agent::Now(), cupti_now, Agent::Now());   // a bracketed reading
//   converter:  int64_t t = clock.ToAgent(record->start);
//
// CUPTI stamps activity records with its own CPU clock (CLOCK_REALTIME on
// Linux) after converting GPU times onto it, so the two clocks tick at one
// rate and differ by an offset that moves only when the wall clock is stepped.
// The offset is that of the tightest bracket (smallest after - before) among
// the readings since the last Commit(), so one reading delayed by preemption
// does not spoil it; Commit() publishes it. The agent does not register a
// CUPTI timestamp callback (which would put CUPTI on CLOCK_MONOTONIC
// directly): it would stay in force when the tracer yields CUPTI to
// torch.profiler, whose own timeline expects CUPTI's default clock.
//
// Threading: AddSample/Commit from one sampling thread at a time; ToAgent
// from any thread (the published offset is one atomic).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_GPU_CLOCK_MAP_H_
#define TRAINSCOPE_AGENT_SRC_GPU_GPU_CLOCK_MAP_H_

#include <atomic>
#include <cstdint>
#include <limits>

namespace trainscope::agent {

class GpuClockMap {
 public:
  // One reading: the agent's clock before, CUPTI's clock, the agent's after.
  void AddSample(int64_t agent_before_ns, uint64_t cupti_ns, int64_t agent_after_ns);
  // Publishes the best pending reading's offset; false when there was none.
  bool Commit();

  bool has_offset() const { return has_offset_.load(std::memory_order_acquire); }
  // agent clock minus CUPTI clock; 0 before the first Commit.
  int64_t offset_ns() const { return offset_ns_.load(std::memory_order_relaxed); }
  // Uncertainty of the published offset: half the bracket.
  int64_t uncertainty_ns() const { return uncertainty_ns_.load(std::memory_order_relaxed); }

  int64_t ToAgent(uint64_t cupti_ns) const {
    return static_cast<int64_t>(cupti_ns + static_cast<uint64_t>(offset_ns()));
  }

 private:
  // Sampling thread only.
  int64_t best_width_ = std::numeric_limits<int64_t>::max();
  int64_t best_offset_ = 0;

  std::atomic<int64_t> offset_ns_{0};
  std::atomic<int64_t> uncertainty_ns_{0};
  std::atomic<bool> has_offset_{false};
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_GPU_CLOCK_MAP_H_
