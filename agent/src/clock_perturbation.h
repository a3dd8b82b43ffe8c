// TEST ONLY: a simulated clock error applied to the timestamps an agent sends
// (AgentOptions::test_clock_*), so clock alignment can be tested on one
// machine against a known ground truth:
//   t' = t + offset_ns + drift_ppm * 1e-6 * (t - origin_ns)
//
// Usage (sender thread):
//   ClockPerturbation p(options.test_clock_offset_ns, options.test_clock_drift_ppm, origin);
//   if (p.active()) t = p.Apply(t);
//
// Threading: immutable after construction; Apply is thread-safe.
#ifndef TRAINSCOPE_AGENT_SRC_CLOCK_PERTURBATION_H_
#define TRAINSCOPE_AGENT_SRC_CLOCK_PERTURBATION_H_

#include <cmath>
#include <cstdint>

namespace trainscope::agent {

class ClockPerturbation {
 public:
  ClockPerturbation() = default;
  ClockPerturbation(int64_t offset_ns, double drift_ppm, int64_t origin_ns)
      : offset_ns_(offset_ns), drift_ppm_(drift_ppm), origin_ns_(origin_ns) {}

  bool active() const { return offset_ns_ != 0 || drift_ppm_ != 0; }

  // The drift term is rounded to the nearest nanosecond.
  int64_t Apply(int64_t t) const {
    const double drift_ns = drift_ppm_ * 1e-6 * static_cast<double>(t - origin_ns_);
    return t + offset_ns_ + static_cast<int64_t>(std::llround(drift_ns));
  }

  int64_t offset_ns() const { return offset_ns_; }
  double drift_ppm() const { return drift_ppm_; }
  int64_t origin_ns() const { return origin_ns_; }

 private:
  int64_t offset_ns_ = 0;
  double drift_ppm_ = 0;
  int64_t origin_ns_ = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_CLOCK_PERTURBATION_H_
