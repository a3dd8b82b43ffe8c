// A set of time intervals kept as their union: sorted, disjoint, non-empty
// half-open [start, end) intervals. What the device-time figures of a step
// are made of: busy time is a union's length, overlap an intersection's,
// idle time a window minus a union.
//
// Usage:
//   IntervalSet kernels;
//   kernels.Add(start, end);  // any order; Normalize() before reading
//   kernels.Normalize();
//   int64_t busy = kernels.Length();
//   IntervalSet idle = IntervalSet::Window(a, b).Minus(kernels);
//
// Threading: plain value type.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_INTERVAL_SET_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_INTERVAL_SET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainscope::collector {

class IntervalSet {
 public:
  struct Interval {
    int64_t start;
    int64_t end;
  };

  // [start, end), or the empty set when end <= start.
  static IntervalSet Window(int64_t start, int64_t end);

  // Adds [start, end) (ignored when empty); the set is not normalized until
  // Normalize().
  void Add(int64_t start, int64_t end) {
    if (end > start) intervals_.push_back(Interval{start, end});
  }
  // Sorts and merges what Add gathered (touching intervals merge).
  void Normalize();
  void Clear() { intervals_.clear(); }

  // The operations below need normalized operands and give normalized sets.
  int64_t Length() const;
  IntervalSet Intersect(const IntervalSet& other) const;
  IntervalSet Minus(const IntervalSet& other) const;
  // Only what lies within [start, end).
  IntervalSet Clip(int64_t start, int64_t end) const { return Intersect(Window(start, end)); }
  // Merges the closest neighbours until at most `max_intervals` remain (the
  // gaps between them count as covered): bounds what a set may hold.
  void Coarsen(size_t max_intervals);

  bool empty() const { return intervals_.empty(); }
  const std::vector<Interval>& intervals() const { return intervals_; }

 private:
  std::vector<Interval> intervals_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_INTERVAL_SET_H_
