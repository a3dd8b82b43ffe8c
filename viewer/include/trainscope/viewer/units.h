// Human units for axes and tooltips, and "nice" axis ticks.
//
// Usage:
//   FormatDuration(1'250'000) == "1.25 ms"
//   std::vector<double> ticks = NiceTicks(0, 3.7e6, 6);  // 0, 1e6, 2e6, 3e6
//
// Threading: pure functions.
#ifndef TRAINSCOPE_VIEWER_UNITS_H_
#define TRAINSCOPE_VIEWER_UNITS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::viewer {

// "850 ns", "12.5 µs", "1.25 ms", "3.2 s" (three significant digits).
std::string FormatDuration(double ns);
// Like FormatDuration but with a leading sign ("+1.2 ms").
std::string FormatOffset(double ns);
// "512 B", "1.5 KiB", "3.2 GiB".
std::string FormatBytes(double bytes);
// "1.2 GFLOP" (with `per_second`: "1.2 GFLOP/s").
std::string FormatFlops(double flops, bool per_second);
// A kernel's signature without its return type, template arguments and
// parameters, for lists that must stay narrow: "void at::native::foo<float,
// 4>(int, float*)" -> "at::native::foo"; names without them are unchanged.
std::string ShortKernelName(const std::string& name);
// Up to `max_ticks` round values (1, 2, 5 times a power of ten) in [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int max_ticks);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_UNITS_H_
