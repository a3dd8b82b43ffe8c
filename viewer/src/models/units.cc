#include "trainscope/viewer/units.h"

#include <cmath>
#include <string_view>

#include "trainscope/base/number_format.h"

namespace trainscope::viewer {
// The figures follow base's one rule (trainscope/base/number_format.h), like
// the CLI's and the collector's; the viewer writes "µs".
constexpr std::string_view kMicro = "\xC2\xB5s";

std::string FormatDuration(double ns) { return base::FormatDuration(ns, {.micro = kMicro}); }

std::string FormatOffset(double ns) {
  return base::FormatDuration(ns, {.plus_sign = true, .micro = kMicro});
}

std::string FormatBytes(double bytes) { return base::FormatBytes(bytes); }

std::string FormatFlops(double flops, bool per_second) {
  return base::FormatSi(flops, per_second ? "FLOP/s" : "FLOP");
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
