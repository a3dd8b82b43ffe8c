// How trainscope writes figures for people: durations, byte sizes, SI-scaled
// quantities (rates, FLOPs, counts) and grouped integers. The one copy of the
// rule (which unit, how many digits) that the collector's alert messages, the
// CLI's tables and the viewer's axes and tooltips share, so one figure reads
// the same everywhere: three significant digits by default ("850 ns",
// "12.5 us", "1.25 ms", "3.20 s", "1.50 KiB", "2.50 TFLOP/s"); a figure that
// rounds up to the next unit takes it ("999.9 us" -> "1.00 ms").
//
// Usage:
//   FormatDuration(1'250'000) == "1.25 ms"
//   FormatDuration(37'012'345, {.significant = 5, .trim_zeros = true, .plus_sign = true})
//       == "+37.012 ms"
//   FormatBytes(1536) == "1.50 KiB"
//   FormatSi(1.2e9, "FLOPS") == "1.20 GFLOPS"
//   FormatThousands(12345) == "12,345"
//
// Threading: pure functions; safe from any thread.
#ifndef TRAINSCOPE_BASE_NUMBER_FORMAT_H_
#define TRAINSCOPE_BASE_NUMBER_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::base {

// How many digits a figure keeps, and how it is decorated.
struct FigureStyle {
  int significant = 3;      // 1 to 17
  bool trim_zeros = false;  // "1.5 KiB", "87 ms" rather than "1.50 KiB", "87.0 ms"
  bool plus_sign = false;   // "+2.00 ms": offsets, where the sign says which side
  // Between the number and the unit: "1.20 GFLOPS" or, with "", "2.50T".
  std::string_view separator = " ";
  // The microsecond symbol of durations: "us" (terminals, logs) or "µs".
  std::string_view micro = "us";
};

// `value` rounded to `significant` digits, without a unit: "1.25", "12.5",
// "125", "1250" (with trim_zeros "1.5" for 1.50). "?" when not finite.
std::string FormatSignificant(double value, int significant, bool trim_zeros = false);

// Nanoseconds in ns, us, ms or s (never minutes: "3600 s"); "0" for zero,
// "?" when not finite.
std::string FormatDuration(double ns, const FigureStyle& style = {});

// Bytes with binary prefixes: "512 B" (whole bytes), "1.50 KiB", "3.20 GiB",
// up to PiB.
std::string FormatBytes(double bytes, const FigureStyle& style = {});

// `value` with an SI prefix (k, M, G, T, P) before `unit`: "1.20 GFLOPS",
// "800 B/s", "0 FLOPS". A `unit` that counts whole things ("" for a count,
// "events") is `whole`: below 1000 it has no decimals ("999", not "999.00").
std::string FormatSi(double value, std::string_view unit, const FigureStyle& style = {},
                     bool whole = false);

// An integer with thousands separators: 1234567 -> "1,234,567".
std::string FormatThousands(uint64_t value);

}  // namespace trainscope::base

#endif  // TRAINSCOPE_BASE_NUMBER_FORMAT_H_
