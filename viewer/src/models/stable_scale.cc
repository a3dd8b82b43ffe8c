#include "trainscope/viewer/stable_scale.h"

#include <cmath>
#include <initializer_list>

namespace trainscope::viewer {

double StableScale::RoundUp(double value) {
  if (!(value > 0)) return 1;
  const double decade = std::pow(10.0, std::floor(std::log10(value)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * decade >= value * (1 - 1e-12)) return m * decade;
  }
  return 10 * decade;
}

double StableScale::Fit(double needed) {
  if (!(needed > 0)) needed = 1;
  if (needed > top_) {
    top_ = RoundUp(needed);
    below_ = 0;
  } else if (needed < top_ / 3) {
    if (++below_ >= patience_) {
      top_ = RoundUp(needed);
      below_ = 0;
    }
  } else {
    below_ = 0;
  }
  return top_;
}

}  // namespace trainscope::viewer
