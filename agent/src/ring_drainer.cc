#include "ring_drainer.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gpu/gpu_event_queue.h"
#include "trainscope/agent/agent.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::agent {

namespace {

// Keeps a batch's string table well under kMaxMessageBytes.
constexpr size_t kMaxStringsPerBatch = (kMaxMessageBytes / 4) / Agent::kMaxStringBytes;

}  // namespace

RingDrainer::RingDrainer(const AgentOptions& options, RingRegistry* rings,
                         const StringTable* strings, const ClockPerturbation& clock_perturbation)
    : options_(options), rings_(rings), strings_(strings), flush_interval_(options.flush_interval) {
  encoder_.set_clock_perturbation(clock_perturbation);
}

void RingDrainer::Pace(const std::vector<std::shared_ptr<ThreadRing>>& rings) {
  double fullest = 0;
  for (const auto& ring : rings) {
    const size_t capacity = ring->ring().capacity();
    if (capacity > 0) {
      fullest = std::max(fullest, static_cast<double>(ring->ring().size()) / capacity);
    }
  }
  if (fullest > 0.5) {
    flush_interval_ = std::max(absl::Milliseconds(1), flush_interval_ / 2);
  } else if (fullest < 0.125) {
    flush_interval_ = std::min(options_.flush_interval, flush_interval_ * 2);
  }
}

void RingDrainer::Drain(absl::FunctionRef<uint64_t()> queued_bytes,
                        absl::FunctionRef<v1::DropCounters()> drops,
                        absl::FunctionRef<bool(EncodedBatch, uint64_t bound)> sink) {
  const std::vector<std::shared_ptr<ThreadRing>> rings = rings_->Snapshot();
  if (rings.empty() && (gpu_events_ == nullptr || gpu_events_->waiting() == 0)) return;
  const uint64_t ring_bytes = rings_->bytes_in_use();
  const uint64_t bound =
      options_.memory_budget_bytes > ring_bytes ? options_.memory_budget_bytes - ring_bytes : 0;
  Pace(rings);

  while (true) {
    const uint64_t used = queued_bytes() + kPlannedBytesPerBatch;
    const uint64_t room = bound > used ? bound - used : 0;
    const size_t limit = static_cast<size_t>(
        std::min<uint64_t>(options_.max_batch_events, room / kPlannedBytesPerEvent));
    if (limit == 0) break;  // at the memory bound: leave the records in the rings
    for (size_t k = 0; k < rings.size() && encoder_.events() < limit; ++k) {
      ThreadRing& ring = *rings[(cursor_ + k) % rings.size()];
      const uint32_t thread_id = ring.os_thread_id();
      ring.ring().Consume(limit - encoder_.events(),
                          [&](const EventRecord& record) { encoder_.Add(record, thread_id); });
      if (encoder_.distinct_strings() >= kMaxStringsPerBatch) break;
    }
    if (gpu_events_ != nullptr && encoder_.events() < limit &&
        encoder_.distinct_strings() < kMaxStringsPerBatch) {
      gpu_events_->Consume(limit - encoder_.events(),
                           [&](const GpuEventRecord& event) { encoder_.AddGpu(event); });
    }
    if (!rings.empty()) cursor_ = (cursor_ + 1) % rings.size();
    const size_t events = encoder_.events();
    if (events == 0) break;

    const bool strings_full = encoder_.distinct_strings() >= kMaxStringsPerBatch;
    if (!sink(encoder_.FinishEncoded(*strings_, drops()), bound)) break;
    if (events < limit && !strings_full) break;  // drained
  }
  rings_->RetireExitedAndEmpty();
}

}  // namespace trainscope::agent
