#include "trainscope/viewer/range_statistics.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainscope::viewer {
namespace {

// The operators of a track whose step is in `span` (every one without).
template <typename Fn>
void ForEachOpInSpan(const MareyTrack& track, const std::optional<StepSpan>& span, Fn fn) {
  for (const std::vector<MareyTrack::Op>* ops : {&track.compute, &track.comm}) {
    for (const MareyTrack::Op& op : *ops) {
      if (!span.has_value() || span->Contains(op.step)) fn(op);
    }
  }
}

void Add(const RangeStatistics::Part& from, RangeStatistics::Part* to) {
  to->steps += from.steps;
  to->wall_ns += from.wall_ns;
  to->data_wait_ns += from.data_wait_ns;
  to->compute_ns += from.compute_ns;
  to->collective_wait_ns += from.collective_wait_ns;
  to->transfer_ns += from.transfer_ns;
  to->idle_ns += from.idle_ns;
  to->has_gpu = to->has_gpu || from.has_gpu;
  to->kernel_ns += from.kernel_ns;
  to->operators += from.operators;
  to->gpu_operators += from.gpu_operators;
}

}  // namespace

absl::StatusOr<StepSpan> ParseStepSpan(const std::string& flag, const std::string& text) {
  const std::vector<std::string> ends = absl::StrSplit(text, '-');
  StepSpan span;
  if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &span.first) ||
      !absl::SimpleAtoi(ends[1], &span.last) || span.last < span.first) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", text, ": expected FIRST-LAST, two step numbers, e.g. 100-120"));
  }
  return span;
}

void RangeStatistics::Accumulate(const DeviceStepRecord& device, Part* part) {
  ++part->steps;
  part->wall_ns += device.step_time_ns;
  part->data_wait_ns += device.data_wait_ns;
  part->compute_ns += device.compute_ns;
  part->collective_wait_ns += device.wait_ns;
  // Older logs leave transfer unset: the rest of the communication after the
  // wait (as the overview's bars read it).
  part->transfer_ns += device.transfer_ns > 0
                           ? device.transfer_ns
                           : std::max<int64_t>(0, device.collective_ns - device.wait_ns);
  part->idle_ns += device.idle_ns;
  if (device.has_gpu) {
    part->has_gpu = true;
    part->kernel_ns += device.gpu_busy_ns;
  }
}

RangeStatistics::Result RangeStatistics::Compute(const MareyTrackStore& store,
                                                 std::optional<StepSpan> span) {
  Result result;
  result.whole_job = !span.has_value();
  std::map<uint32_t, Part> parts;
  for (const auto& [number, step] : store.steps()) {
    if (span.has_value() && !span->Contains(number)) continue;
    if (result.empty) {
      result.first_step = number;
      result.start_ns = step.start_ns;
      result.empty = false;
    }
    result.last_step = number;
    result.end_ns = step.end_ns;
    ++result.steps;
    for (const DeviceStepRecord& device : step.devices) {
      Part& part = parts[device.rank];
      part.rank = device.rank;
      Accumulate(device, &part);
    }
  }
  if (span.has_value() && result.empty) {
    // No step held (evicted, or not closed yet): still name what was asked.
    result.first_step = span->first;
    result.last_step = span->last;
  }
  for (const auto& [rank, track] : store.devices()) {
    Part& part = parts[rank];
    part.rank = rank;
    ForEachOpInSpan(*track, span, [&](const MareyTrack::Op&) { ++part.operators; });
  }
  for (const auto& [rank, lanes] : store.streams()) {
    Part& part = parts[rank];
    part.rank = rank;
    for (const auto& [lane, track] : lanes) {
      ForEachOpInSpan(*track, span, [&](const MareyTrack::Op&) { ++part.gpu_operators; });
    }
  }
  for (auto& [rank, part] : parts) {
    Add(part, &result.total);
    result.ranks.push_back(part);
  }
  return result;
}

std::optional<StepSpan> RangeStatistics::StepsInTimeRange(
    const std::map<uint64_t, StepRecord>& steps, int64_t t0, int64_t t1) {
  if (t1 < t0) std::swap(t0, t1);
  std::optional<StepSpan> span;
  std::optional<uint64_t> best;
  int64_t best_overlap = 0;
  for (const auto& [number, step] : steps) {
    const int64_t overlap = std::min(t1, step.end_ns) - std::max(t0, step.start_ns);
    if (overlap <= 0) continue;
    if (overlap > best_overlap) best_overlap = overlap, best = number;
    // At least half of the step: 2 * overlap >= its length.
    if (2 * overlap >= step.end_ns - step.start_ns) {
      if (!span.has_value()) span = StepSpan{number, number};
      span->last = number;
    }
  }
  if (!span.has_value() && best.has_value()) span = StepSpan{*best, *best};
  return span;
}

}  // namespace trainscope::viewer
