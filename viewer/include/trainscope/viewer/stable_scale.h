// The top of an axis that does not jump with every frame: it grows at once
// to a round value above what must fit, and shrinks (to a round value) only
// after what must fit has stayed below a third of it for `patience` fits in
// a row. The overview's bars use it so a step twice as slow as the others
// does not rescale every bar twice a second (issue 23.4: 60 -> 300 ms).
//
// Usage:
//   StableScale scale;
//   const double top = scale.Fit(max_step_time * 1.08);  // each rebuild
//
// Threading: a plain value.
#ifndef TRAINSCOPE_VIEWER_STABLE_SCALE_H_
#define TRAINSCOPE_VIEWER_STABLE_SCALE_H_

#include <cstdint>

namespace trainscope::viewer {

class StableScale {
 public:
  explicit StableScale(uint32_t patience = 20) : patience_(patience) {}

  // The axis top for a frame whose largest value is `needed` (> 0).
  double Fit(double needed);
  double top() const { return top_; }
  void Reset() { top_ = 0, below_ = 0; }

  // The smallest of 1, 2, 2.5, 5 x 10^k at or above `value` (> 0).
  static double RoundUp(double value);

 private:
  uint32_t patience_;
  double top_ = 0;
  uint32_t below_ = 0;  // fits in a row that needed less than a third of top_
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_STABLE_SCALE_H_
