// The user's spelling of a halt policy, shared by `trainscope-collector`,
// `trainscope run` and `trainscope policy`:
//   --halt-when straggler,slow_link --for 5
//   --halt-below-efficiency 0.4 --for 10
//
// Usage:
//   ASSIGN_OR_RETURN(v1::HaltPolicy policy, ParseHaltPolicy("straggler", 5, 0));
//   std::cout << DescribeHaltPolicy(policy);  // "halt when straggler holds for 5 ..."
//
// Threading: free functions, no state.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_HALT_POLICY_SPEC_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_HALT_POLICY_SPEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/v1/alerts.pb.h"

namespace trainscope::collector {

// `halt_when`: comma-separated rule names (empty: none); `for_steps` >= 1
// whenever a condition is given; `below_efficiency` in (0, 1), 0: off. Both
// empty: a disabled policy. INVALID_ARGUMENT names the flag and what was
// expected (the known rule names for an unknown one).
absl::StatusOr<trainscope::v1::HaltPolicy> ParseHaltPolicy(absl::string_view halt_when,
                                                           int64_t for_steps,
                                                           double below_efficiency);

// One line for people: "halt when straggler or slow_link holds for 5
// consecutive steps", "no halt policy".
std::string DescribeHaltPolicy(const trainscope::v1::HaltPolicy& policy);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_HALT_POLICY_SPEC_H_
