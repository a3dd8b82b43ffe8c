#include "trainscope/viewer/units.h"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace trainscope::viewer {
namespace {

std::string ThreeDigits(double value, const char* unit) {
  char buffer[48];
  const double magnitude = std::fabs(value);
  const char* format = magnitude >= 100 ? "%.0f %s" : magnitude >= 10 ? "%.1f %s" : "%.2f %s";
  std::snprintf(buffer, sizeof(buffer), format, value, unit);
  return buffer;
}

std::string Scaled(double value, const char* const* units, int count, double base) {
  int index = 0;
  while (index + 1 < count && std::fabs(value) >= base) {
    value /= base;
    ++index;
  }
  return ThreeDigits(value, units[index]);
}

}  // namespace

std::string FormatDuration(double ns) {
  static const char* const kUnits[] = {"ns", "\xC2\xB5s", "ms", "s"};
  if (std::fabs(ns) >= 1e9 * 1000) return ThreeDigits(ns / 1e9, "s");
  if (ns == 0) return "0";
  return Scaled(ns, kUnits, 4, 1000.0);
}

std::string FormatOffset(double ns) { return (ns > 0 ? "+" : "") + FormatDuration(ns); }

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return Scaled(bytes, kUnits, 5, 1024.0);
}

std::string FormatFlops(double flops, bool per_second) {
  static const char* const kUnits[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  static const char* const kRateUnits[] = {"FLOP/s",  "kFLOP/s", "MFLOP/s",
                                           "GFLOP/s", "TFLOP/s", "PFLOP/s"};
  return Scaled(flops, per_second ? kRateUnits : kUnits, 6, 1000.0);
}

std::string ShortKernelName(const std::string& name) {
  std::string out = name;
  if (out.rfind("void ", 0) == 0) out.erase(0, 5);
  // "at::native::(anonymous namespace)::CatArrayBatchedCopy<...>": the
  // namespace's parentheses are not the parameters.
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (size_t at = out.find(kAnonymous); at != std::string::npos; at = out.find(kAnonymous)) {
    out.erase(at, kAnonymous.size());
  }
  // Cut at the first '<' or '(' right after a name: "Memcpy HtoD (Pinned ->
  // Device)" keeps its words, "operator()" its parentheses.
  for (size_t cut = out.find_first_of("<(", 1); cut != std::string::npos;
       cut = out.find_first_of("<(", cut + 1)) {
    if (out[cut - 1] == ' ' || out.compare(cut, 2, "()") == 0) continue;
    out.resize(cut);
    break;
  }
  return out.empty() ? name : out;
}

std::vector<double> NiceTicks(double lo, double hi, int max_ticks) {
  std::vector<double> ticks;
  if (!(hi > lo) || max_ticks < 1) return ticks;
  const double raw = (hi - lo) / max_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

}  // namespace trainscope::viewer
