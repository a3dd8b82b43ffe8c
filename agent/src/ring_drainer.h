// Turns what the recording threads left in their rings (and the GPU event
// queue) into encoded batches, within the agent's memory budget, and paces
// how often that happens.
//
// Usage (sender thread):
//   RingDrainer drainer(options, &rings, &strings, clock_perturbation);
//   drainer.set_gpu_events(&gpu_queue);                     // optional, before draining
//   drainer.Drain([&] { return queue.bytes(); }, [&] { return drops; },
//                 [&](EncodedBatch b, uint64_t bound) { return queue.Push(std::move(b),
//                 bound).all_queued; });
//   next_flush = now + drainer.flush_interval();
//
// A batch holds at most max_batch_events events and fewer distinct strings
// than keep its string table well under the message limit; the rings are
// visited round-robin from a rotating first ring, so no thread starves.
// Memory: records leave the rings only while the queue's bytes plus a
// planning figure per event stay under memory_budget_bytes minus what the
// rings hold; at that bound they stay (the rings fill and producers drop the
// newest, counted as ring_full).
// Raw operators (EventKind::kOperatorTicks, written by a hook straight into
// its ring) are mapped from ticks to ns with options.tick_mapper's fit, read
// once per Drain call, and sent as operators; per ring their ends stay
// monotonic across fits.
// Pacing: the flush interval halves (down to 1 ms) while a ring is more than
// half full and doubles back (up to the options' flush_interval) once every
// ring is under an eighth full.
//
// Threading: not thread-safe; one owner (the sender thread). The rings and
// the GPU queue are single-consumer: this is their consumer.
#ifndef TRAINSCOPE_AGENT_SRC_RING_DRAINER_H_
#define TRAINSCOPE_AGENT_SRC_RING_DRAINER_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "batch_encoder.h"
#include "clock_perturbation.h"
#include "ring_registry.h"
#include "string_table.h"
#include "trainscope/agent/agent_options.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::agent {

class GpuEventQueue;

class RingDrainer {
 public:
  // Planning figures for a batch in memory (the exact size is known once it
  // is encoded): at most ~40 bytes of columns per event (84 for a GPU
  // collective, the largest) and a message's fixed part and strings.
  static constexpr uint64_t kPlannedBytesPerEvent = 96;
  static constexpr uint64_t kPlannedBytesPerBatch = 4096;

  // The options, rings and strings outlive the drainer.
  RingDrainer(const AgentOptions& options, RingRegistry* rings, const StringTable* strings,
              const ClockPerturbation& clock_perturbation);

  // Device events to drain besides the rings'; the queue outlives the drainer.
  void set_gpu_events(GpuEventQueue* queue) { gpu_events_ = queue; }

  // Drains until the rings are empty, `sink` refuses a batch (the queue is at
  // its bound) or the bound leaves no room. `queued_bytes()`: what the queue
  // holds now; `drops()`: the counters each batch carries; `sink` gets each
  // batch with the bound the queue's bytes must stay under.
  void Drain(absl::FunctionRef<uint64_t()> queued_bytes,
             absl::FunctionRef<v1::DropCounters()> drops,
             absl::FunctionRef<bool(EncodedBatch, uint64_t bound)> sink);

  absl::Duration flush_interval() const { return flush_interval_; }

 private:
  void Pace(const std::vector<std::shared_ptr<ThreadRing>>& rings);

  const AgentOptions& options_;
  RingRegistry* const rings_;
  const StringTable* const strings_;
  GpuEventQueue* gpu_events_ = nullptr;
  BatchEncoder encoder_;
  size_t cursor_ = 0;  // the ring drained first next time
  absl::Duration flush_interval_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_RING_DRAINER_H_
