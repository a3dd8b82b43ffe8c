#include "trainscope/base/number_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainscope::base {

namespace {

// Digits after the point that leave `significant` digits in `value` (> 0).
int DecimalsFor(double value, int significant) {
  const int integer_digits = static_cast<int>(std::floor(std::log10(std::fabs(value)))) + 1;
  return std::max(0, significant - integer_digits);
}

double RoundSignificant(double value, int significant) {
  if (value == 0 || !std::isfinite(value)) return value;
  const int decimals = significant - 1 - static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

std::string Fixed(double value, int decimals, bool trim_zeros) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  std::string out = buffer;
  if (trim_zeros && out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  if (out == "-0") out = "0";
  return out;
}

// `value` scaled by `step` until under it (or out of units), with the unit's
// name; a number that rounds up to `step` takes the next unit ("1.00 k", not
// "1000").
std::string Scaled(double value, const std::string_view* units, int count, double step,
                   const FigureStyle& style, bool whole_base_unit) {
  if (!std::isfinite(value)) return "?";
  const int significant = std::clamp(style.significant, 1, 17);
  double scaled = value;
  int index = 0;
  while (index + 1 < count && std::fabs(scaled) >= step) {
    scaled /= step;
    ++index;
  }
  auto round = [&](double v) {
    return index == 0 && whole_base_unit ? std::round(v) : RoundSignificant(v, significant);
  };
  double rounded = round(scaled);
  if (index + 1 < count && std::fabs(rounded) >= step) {  // 999.96 us -> 1.00 ms
    scaled /= step;
    ++index;
    rounded = round(scaled);
  }
  scaled = rounded;
  std::string number;
  if (scaled == 0) {
    number = "0";
  } else if (index == 0 && whole_base_unit) {
    number = Fixed(scaled, 0, false);
  } else {
    number = Fixed(scaled, DecimalsFor(scaled, significant), style.trim_zeros);
  }
  const std::string sign = style.plus_sign && value > 0 ? "+" : "";
  return sign + number + std::string(style.separator) + std::string(units[index]);
}

}  // namespace

std::string FormatSignificant(double value, int significant, bool trim_zeros) {
  if (!std::isfinite(value)) return "?";
  significant = std::clamp(significant, 1, 17);
  const double rounded = RoundSignificant(value, significant);
  if (rounded == 0) return "0";
  return Fixed(rounded, DecimalsFor(rounded, significant), trim_zeros);
}

std::string FormatDuration(double ns, const FigureStyle& style) {
  if (!std::isfinite(ns)) return "?";
  if (ns == 0) return "0";
  const std::string_view units[] = {"ns", style.micro, "ms", "s"};
  return Scaled(ns, units, 4, 1000.0, style, /*whole_base_unit=*/false);
}

std::string FormatBytes(double bytes, const FigureStyle& style) {
  static constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return Scaled(bytes, kUnits, 6, 1024.0, style, /*whole_base_unit=*/true);
}

std::string FormatSi(double value, std::string_view unit, const FigureStyle& style, bool whole) {
  const std::string u(unit);
  const std::string prefixed[] = {u, "k" + u, "M" + u, "G" + u, "T" + u, "P" + u};
  const std::string_view units[] = {prefixed[0], prefixed[1], prefixed[2],
                                    prefixed[3], prefixed[4], prefixed[5]};
  return Scaled(value, units, 6, 1000.0, style, whole);
}

std::string FormatThousands(uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  const size_t first_group = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i >= first_group && (i - first_group) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace trainscope::base
