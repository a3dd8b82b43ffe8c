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

// The times of a raw operator (EventKind::kOperatorTicks, ticks in its time
// fields) in ns, its ticks mapped with `fit`; its end is held at or above
// *last_end_ns (the ring's previous end), which it updates. The drain loop
// hands them straight to BatchEncoder::AddOperator: no record is built, and
// two mappings per operator.
void MapRawTimes(const EventRecord& raw, const TickFit& fit, int64_t* last_end_ns,
                 int64_t* start_ns, int64_t* end_ns) {
  const uint64_t start_ticks = static_cast<uint64_t>(raw.start_ns);
  const uint64_t end_ticks = static_cast<uint64_t>(raw.end_ns);
  const int64_t mapped_end = fit.ToNs(end_ticks);
  // A thread's raw operators are pushed as they end, so their ends are in
  // order; a fit moved by a recalibration between two drains could map a
  // later tick a little below an earlier one: the end is held, the duration kept.
  const int64_t end = mapped_end < *last_end_ns ? *last_end_ns : mapped_end;
  *last_end_ns = end;
  const int64_t duration = end_ticks >= start_ticks ? mapped_end - fit.ToNs(start_ticks) : 0;
  *end_ns = end;
  *start_ns = end - (duration > 0 ? duration : 0);
}

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

  // One fit for the whole drain: a recalibration between drains moves the
  // mapping, never within a batch.
  const TickFit fit =
      options_.tick_mapper != nullptr ? options_.tick_mapper->CurrentFit() : TickFit::Identity();
  while (true) {
    const uint64_t used = queued_bytes() + kPlannedBytesPerBatch;
    const uint64_t room = bound > used ? bound - used : 0;
    const size_t limit = static_cast<size_t>(
        std::min<uint64_t>(options_.max_batch_events, room / kPlannedBytesPerEvent));
    if (limit == 0) break;  // at the memory bound: leave the records in the rings
    for (size_t k = 0; k < rings.size() && encoder_.events() < limit; ++k) {
      ThreadRing& ring = *rings[(cursor_ + k) % rings.size()];
      const uint32_t thread_id = ring.os_thread_id();
      int64_t last_end = ring.last_mapped_end_ns();
      ring.ring().Consume(limit - encoder_.events(), [&](const EventRecord& record) {
        if (record.kind == EventKind::kOperatorTicks) [[likely]] {
          int64_t start_ns;
          int64_t end_ns;
          MapRawTimes(record, fit, &last_end, &start_ns, &end_ns);
          encoder_.AddOperator(start_ns, end_ns, record.name, record.value, record.detail,
                               thread_id);
        } else {
          encoder_.Add(record, thread_id);
        }
      });
      ring.set_last_mapped_end_ns(last_end);
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
