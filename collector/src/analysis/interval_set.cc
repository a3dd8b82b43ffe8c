#include "trainscope/collector/analysis/interval_set.h"

#include <algorithm>

namespace trainscope::collector {

IntervalSet IntervalSet::Window(int64_t start, int64_t end) {
  IntervalSet s;
  s.Add(start, end);
  return s;
}

void IntervalSet::Normalize() {
  if (intervals_.size() < 2) return;
  const auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  // One stream's work is added in start order: no sort needed then.
  if (!std::is_sorted(intervals_.begin(), intervals_.end(), by_start)) {
    std::sort(intervals_.begin(), intervals_.end(), by_start);
  }
  size_t out = 0;
  for (size_t i = 1; i < intervals_.size(); ++i) {
    Interval& last = intervals_[out];
    if (intervals_[i].start <= last.end) {
      last.end = std::max(last.end, intervals_[i].end);
    } else {
      intervals_[++out] = intervals_[i];
    }
  }
  intervals_.resize(out + 1);
}

int64_t IntervalSet::Length() const {
  int64_t total = 0;
  for (const Interval& iv : intervals_) total += iv.end - iv.start;
  return total;
}

IntervalSet IntervalSet::Intersect(const IntervalSet& other) const {
  IntervalSet out;
  size_t i = 0, j = 0;
  const std::vector<Interval>& a = intervals_;
  const std::vector<Interval>& b = other.intervals_;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start, b[j].start);
    const int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.intervals_.push_back(Interval{lo, hi});
    // Advance whichever ends first: it meets nothing further.
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet IntervalSet::Minus(const IntervalSet& other) const {
  IntervalSet out;
  size_t j = 0;
  const std::vector<Interval>& b = other.intervals_;
  for (const Interval& iv : intervals_) {
    int64_t cursor = iv.start;
    while (j < b.size() && b[j].end <= cursor) ++j;
    size_t k = j;
    while (k < b.size() && b[k].start < iv.end) {
      if (b[k].start > cursor) out.intervals_.push_back(Interval{cursor, b[k].start});
      cursor = std::max(cursor, b[k].end);
      ++k;
    }
    if (cursor < iv.end) out.intervals_.push_back(Interval{cursor, iv.end});
  }
  return out;
}

void IntervalSet::Coarsen(size_t max_intervals) {
  if (max_intervals == 0) max_intervals = 1;
  while (intervals_.size() > max_intervals) {
    // Close the smallest gaps first: one pass closes every gap up to the
    // size that leaves at most max_intervals.
    std::vector<int64_t> gaps;
    gaps.reserve(intervals_.size() - 1);
    for (size_t i = 1; i < intervals_.size(); ++i) {
      gaps.push_back(intervals_[i].start - intervals_[i - 1].end);
    }
    const size_t to_close = intervals_.size() - max_intervals;
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<ptrdiff_t>(to_close - 1), gaps.end());
    const int64_t limit = gaps[to_close - 1];
    size_t out = 0;
    size_t closed = 0;
    for (size_t i = 1; i < intervals_.size(); ++i) {
      const int64_t gap = intervals_[i].start - intervals_[out].end;
      if (gap <= limit && closed < to_close) {
        intervals_[out].end = intervals_[i].end;
        ++closed;
      } else {
        intervals_[++out] = intervals_[i];
      }
    }
    intervals_.resize(out + 1);
  }
}

}  // namespace trainscope::collector
