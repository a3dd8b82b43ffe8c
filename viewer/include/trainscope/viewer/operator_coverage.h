// Which of a stored job's operators the viewer loaded: --max-operators bounds
// them, and when it cut some the window says so with the numbers and how to
// load a range instead (issue 23.5: a stored job silently lost its oldest
// operators past --max-operators).
//
// Usage:
//   OperatorCoverage coverage = OperatorCoverage::Measure(total, evicted, truncated, max, data);
//   if (coverage.cut()) show(coverage.Notice());
//
// Threading: a plain value.
#ifndef TRAINSCOPE_VIEWER_OPERATOR_COVERAGE_H_
#define TRAINSCOPE_VIEWER_OPERATOR_COVERAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace trainscope::viewer {

class OperatorCoverage {
 public:
  // `total`: the operators the job's log holds (in the range asked for;
  // nullopt: more than were loaded, exactly how many unknown);
  // `loaded`: those that came; `max_operators`: the bound; `job_steps` and
  // `loaded_steps`: [first, last] of the job's steps and of the loaded
  // operators' steps; `range`: the steps asked for (--steps), if any.
  OperatorCoverage() = default;
  OperatorCoverage(std::optional<uint64_t> total, uint64_t loaded, uint64_t max_operators,
                   std::optional<std::pair<uint64_t, uint64_t>> job_steps,
                   std::optional<std::pair<uint64_t, uint64_t>> loaded_steps,
                   std::optional<std::pair<uint64_t, uint64_t>> range);

  // Some operators were left out.
  bool cut() const { return !total_.has_value() || loaded_ < *total_; }
  std::optional<uint64_t> total() const { return total_; }
  uint64_t loaded() const { return loaded_; }
  // "Showing 1,000 of 52,340 operators (--max-operators 1,000): steps 590-600 of 1-600. ..."
  // Empty when nothing was cut.
  std::string Notice() const;

  // "1,234,567".
  static std::string Grouped(uint64_t value);

 private:
  std::optional<uint64_t> total_ = 0;
  uint64_t loaded_ = 0;
  uint64_t max_operators_ = 0;
  std::optional<std::pair<uint64_t, uint64_t>> job_steps_;
  std::optional<std::pair<uint64_t, uint64_t>> loaded_steps_;
  std::optional<std::pair<uint64_t, uint64_t>> range_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_OPERATOR_COVERAGE_H_
