#include "trainscope/viewer/ring_filter.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace trainscope::viewer {
namespace {

constexpr const char* kExpected =
    "expected host=NAME[,NAME], rack=NAME[,NAME], x=LO[-HI] or y=LO[-HI]";

absl::StatusOr<RingFilter::Range> ParseRange(const std::string& term, const std::string& value) {
  const std::vector<std::string> ends = absl::StrSplit(value, '-');
  RingFilter::Range range;
  if (ends.empty() || ends.size() > 2 || !absl::SimpleAtoi(ends[0], &range.lo) ||
      !absl::SimpleAtoi(ends.back(), &range.hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring filter '", term, "': expected a coordinate or LO-HI, two integers"));
  }
  if (range.hi < range.lo) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring filter '", term, "': the range ends before it starts"));
  }
  return range;
}

}  // namespace

absl::StatusOr<RingFilter> RingFilter::Parse(const std::string& text) {
  RingFilter filter;
  for (const std::string& term :
       std::vector<std::string>(absl::StrSplit(text, ' ', absl::SkipEmpty()))) {
    const size_t eq = term.find('=');
    const std::string key = eq == std::string::npos ? term : term.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : term.substr(eq + 1);
    if (value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("ring filter '", term, "': ", kExpected));
    }
    if (key == "host" || key == "rack") {
      std::set<std::string>& names = key == "host" ? filter.hosts : filter.racks;
      for (const std::string& name :
           std::vector<std::string>(absl::StrSplit(value, ',', absl::SkipEmpty())))
        names.insert(name);
    } else if (key == "x" || key == "y") {
      absl::StatusOr<Range> range = ParseRange(term, value);
      if (!range.ok()) return range.status();
      (key == "x" ? filter.x : filter.y) = *range;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("ring filter '", term, "': unknown term '", key, "' (", kExpected, ")"));
    }
  }
  return filter;
}

bool RingFilter::Accepts(const std::string& host, const std::string& rack,
                         const std::pair<uint32_t, uint32_t>* coordinates) const {
  if (!hosts.empty() && hosts.count(host) == 0) return false;
  if (!racks.empty() && racks.count(rack) == 0) return false;
  if (!has_dimension()) return true;
  if (coordinates == nullptr) return false;
  auto within = [](const std::optional<Range>& r, uint32_t v) {
    return !r.has_value() || (v >= r->lo && v <= r->hi);
  };
  return within(x, coordinates->first) && within(y, coordinates->second);
}

std::string RingFilter::ToString() const {
  std::vector<std::string> terms;
  if (!hosts.empty()) terms.push_back(absl::StrCat("host=", absl::StrJoin(hosts, ",")));
  if (!racks.empty()) terms.push_back(absl::StrCat("rack=", absl::StrJoin(racks, ",")));
  for (const auto& [name, range] : {std::pair{"x", &x}, std::pair{"y", &y}}) {
    if (!range->has_value()) continue;
    terms.push_back((*range)->lo == (*range)->hi
                        ? absl::StrCat(name, "=", (*range)->lo)
                        : absl::StrCat(name, "=", (*range)->lo, "-", (*range)->hi));
  }
  return absl::StrJoin(terms, " ");
}

}  // namespace trainscope::viewer
