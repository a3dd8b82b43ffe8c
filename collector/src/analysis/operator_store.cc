#include "trainscope/collector/analysis/operator_store.h"

#include <algorithm>
#include <limits>

namespace trainscope::collector {
namespace {

void Extend(int64_t start, int64_t end, bool first, int64_t* min_start, int64_t* max_end,
            int64_t* max_duration) {
  if (first) {
    *min_start = start;
    *max_end = end;
    *max_duration = end - start;
    return;
  }
  *min_start = std::min(*min_start, start);
  *max_end = std::max(*max_end, end);
  *max_duration = std::max(*max_duration, end - start);
}

// Sorts [first, last) by start. StepAssembler's runs are nearly sorted
// (operators arrive by end: an enclosing operator follows what it encloses),
// so an insertion sort with few moves wins; past a budget of moves it
// hands over to std::sort.
template <typename It, typename Less>
void SortNearlySorted(It first, It last, Less less) {
  const ptrdiff_t n = last - first;
  ptrdiff_t budget = 8 * n + 64;
  for (It i = first + (n > 0 ? 1 : 0); i < last; ++i) {
    if (!less(*i, *(i - 1))) continue;
    auto value = std::move(*i);
    It j = i;
    do {
      *j = std::move(*(j - 1));
      --j;
    } while (j > first && less(value, *(j - 1)) && --budget > 0);
    *j = std::move(value);
    if (budget <= 0) {
      std::sort(first, last, less);
      return;
    }
  }
}

bool OpOverlaps(const OperatorRecord& op, const OperatorRange& range) {
  if (range.everything()) return true;
  const bool raw = range.raw_timestamps;
  return op.End(raw) >= range.start_ns && op.Start(raw) <= range.end_ns;
}

}  // namespace

OperatorStore::OperatorStore(OperatorStoreOptions options) : options_(options) {}

void OperatorStore::Insert(std::vector<OperatorRecord> operators) {
  if (operators.empty()) return;
  Block block;
  block.step = operators.front().step;
  // StepAssembler hands them over grouped by rank in end order: sorting
  // each rank's run is cheaper than one sort over all.
  const auto by_start = [](const OperatorRecord& a, const OperatorRecord& b) {
    return a.start_ns < b.start_ns;
  };
  bool grouped = true;
  for (auto first = operators.begin(); first != operators.end();) {
    auto last = std::find_if(first, operators.end(),
                             [&](const OperatorRecord& op) { return op.rank != first->rank; });
    if (last != operators.end() && last->rank < first->rank) {
      grouped = false;
      break;
    }
    SortNearlySorted(first, last, by_start);
    first = last;
  }
  if (!grouped) {
    std::sort(operators.begin(), operators.end(),
              [](const OperatorRecord& a, const OperatorRecord& b) {
                return a.rank != b.rank ? a.rank < b.rank : a.start_ns < b.start_ns;
              });
  }
  block.operators = std::move(operators);
  const std::vector<OperatorRecord>& ops = block.operators;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const OperatorRecord& op = ops[i];
    const bool first_of_block = i == 0;
    if (first_of_block || block.devices.back().rank != op.rank) {
      DeviceSpan span;
      span.rank = op.rank;
      span.begin = i;
      block.devices.push_back(span);
    }
    DeviceSpan& span = block.devices.back();
    const bool first_of_span = span.begin == i;
    span.end = i + 1;
    Extend(op.start_ns, op.end_ns, first_of_span, &span.aligned.min_start, &span.aligned.max_end,
           &span.aligned.max_duration);
    Extend(op.raw_start_ns, op.raw_end_ns, first_of_span, &span.raw.min_start, &span.raw.max_end,
           &span.raw.max_duration);
  }
  for (size_t i = 0; i < block.devices.size(); ++i) {
    const DeviceSpan& span = block.devices[i];
    Extend(span.aligned.min_start, span.aligned.max_end, i == 0, &block.aligned.min_start,
           &block.aligned.max_end, &block.aligned.max_duration);
    Extend(span.raw.min_start, span.raw.max_end, i == 0, &block.raw.min_start, &block.raw.max_end,
           &block.raw.max_duration);
  }
  stats_.operators += ops.size();
  ++stats_.steps;
  blocks_.push_back(std::move(block));
  // Evict the oldest steps, but always keep the newest one.
  while (stats_.operators > options_.max_operators && blocks_.size() > 1) {
    const uint64_t n = blocks_.front().operators.size();
    stats_.operators -= n;
    --stats_.steps;
    stats_.evicted_operators += n;
    ++stats_.evicted_steps;
    evicted_storage_ = std::move(blocks_.front().operators);
    blocks_.pop_front();
  }
}

std::vector<OperatorRecord> OperatorStore::TakeEvictedStorage() {
  std::vector<OperatorRecord> storage = std::move(evicted_storage_);
  evicted_storage_ = {};
  storage.clear();
  return storage;
}

bool OperatorStore::Overlaps(const Bounds& b, const OperatorRange& range) {
  if (range.everything()) return true;
  return b.max_end >= range.start_ns && b.min_start <= range.end_ns;
}

const OperatorStore::DeviceSpan* OperatorStore::FindDevice(const Block& block, uint32_t rank) {
  auto it = std::lower_bound(block.devices.begin(), block.devices.end(), rank,
                             [](const DeviceSpan& s, uint32_t r) { return s.rank < r; });
  return it != block.devices.end() && it->rank == rank ? &*it : nullptr;
}

std::pair<uint32_t, uint32_t> OperatorStore::Candidates(const Block& block, const DeviceSpan& span,
                                                        const OperatorRange& range) {
  if (range.everything()) return {span.begin, span.end};
  const bool raw = range.raw_timestamps;
  const Bounds& bounds = raw ? span.raw : span.aligned;
  const auto first = block.operators.begin() + span.begin;
  const auto last = block.operators.begin() + span.end;
  // An operator overlapping the range starts at most max_duration before it.
  const int64_t from = range.start_ns - bounds.max_duration;
  auto lo = std::lower_bound(
      first, last, from, [raw](const OperatorRecord& op, int64_t t) { return op.Start(raw) < t; });
  auto hi = std::upper_bound(lo, last, range.end_ns, [raw](int64_t t, const OperatorRecord& op) {
    return t < op.Start(raw);
  });
  return {static_cast<uint32_t>(lo - block.operators.begin()),
          static_cast<uint32_t>(hi - block.operators.begin())};
}

std::vector<uint32_t> OperatorStore::RanksFor(const OperatorRange& range) const {
  if (!range.ranks.empty()) {
    std::vector<uint32_t> ranks = range.ranks;
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    return ranks;
  }
  return Ranks();
}

std::vector<uint32_t> OperatorStore::Ranks() const {
  std::vector<uint32_t> ranks;
  for (const Block& block : blocks_) {
    for (const DeviceSpan& span : block.devices) ranks.push_back(span.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

void OperatorStore::ForEachCandidateSpan(
    const OperatorRange& range,
    absl::FunctionRef<void(const Block&, const DeviceSpan&, uint32_t, uint32_t)> fn) const {
  const bool raw = range.raw_timestamps;
  std::vector<const Block*> blocks;
  for (const Block& block : blocks_) {
    if (Overlaps(raw ? block.raw : block.aligned, range)) blocks.push_back(&block);
  }
  if (blocks.empty()) return;
  for (uint32_t rank : RanksFor(range)) {
    for (const Block* block : blocks) {
      const DeviceSpan* span = FindDevice(*block, rank);
      if (span == nullptr || !Overlaps(raw ? span->raw : span->aligned, range)) continue;
      const auto [lo, hi] = Candidates(*block, *span, range);
      fn(*block, *span, lo, hi);
    }
  }
}

void OperatorStore::ForEach(const OperatorRange& range,
                            absl::FunctionRef<void(const OperatorRecord&)> fn) const {
  ForEachCandidateSpan(range, [&](const Block& block, const DeviceSpan&, uint32_t lo, uint32_t hi) {
    for (uint32_t i = lo; i < hi; ++i) {
      const OperatorRecord& op = block.operators[i];
      if (OpOverlaps(op, range)) fn(op);
    }
  });
}

void OperatorStore::ForEachDeviceStep(
    const OperatorRange& range,
    absl::FunctionRef<void(uint32_t, uint64_t, absl::Span<const OperatorRecord>)> fn) const {
  ForEachCandidateSpan(
      range, [&](const Block& block, const DeviceSpan& span, uint32_t lo, uint32_t hi) {
        bool any = false;
        for (uint32_t i = lo; i < hi && !any; ++i) any = OpOverlaps(block.operators[i], range);
        if (!any) return;
        fn(span.rank, block.step,
           absl::MakeConstSpan(block.operators.data() + span.begin, span.end - span.begin));
      });
}

std::pair<int64_t, int64_t> OperatorStore::Extent(bool raw_timestamps) const {
  if (blocks_.empty()) return {0, 0};
  int64_t lo = std::numeric_limits<int64_t>::max();
  int64_t hi = std::numeric_limits<int64_t>::min();
  for (const Block& block : blocks_) {
    const Bounds& b = raw_timestamps ? block.raw : block.aligned;
    lo = std::min(lo, b.min_start);
    hi = std::max(hi, b.max_end);
  }
  return {lo, hi};
}

OperatorStoreStats OperatorStore::stats() const { return stats_; }

}  // namespace trainscope::collector
