// Which devices the Hilbert ring shows (issue 24.4, Cheng et al.'s
// filters): by node (host), by group (rack) and by dimension (a range of a
// device's mesh or torus coordinate along x or y). Every part given must
// hold; an empty filter shows every device. Parsed from the text a user
// types (`--ring-filter`, the ring's filter box), so a typo is refused with
// what was expected rather than silently showing nothing.
//
// Usage:
//   absl::StatusOr<RingFilter> filter = RingFilter::Parse("rack=rack-1 x=0-7");
//   if (filter->Accepts("node-3", "rack-1", &xy)) ...
//
// Threading: a value; no shared state.
#ifndef TRAINSCOPE_VIEWER_RING_FILTER_H_
#define TRAINSCOPE_VIEWER_RING_FILTER_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace trainscope::viewer {

class RingFilter {
 public:
  // An inclusive range of one coordinate.
  struct Range {
    uint32_t lo = 0, hi = 0;
    bool operator==(const Range&) const = default;
  };

  // Space-separated terms: host=NAME[,NAME...], rack=NAME[,NAME...],
  // x=LO[-HI], y=LO[-HI]; "" is the empty filter.
  static absl::StatusOr<RingFilter> Parse(const std::string& text);

  bool empty() const { return hosts.empty() && racks.empty() && !x && !y; }
  bool has_dimension() const { return x.has_value() || y.has_value(); }
  // `coordinates`: the device's (x, y), null when it has none (then a
  // dimension filter refuses it).
  bool Accepts(const std::string& host, const std::string& rack,
               const std::pair<uint32_t, uint32_t>* coordinates) const;
  // The filter as Parse reads it back ("" when empty).
  std::string ToString() const;

  bool operator==(const RingFilter&) const = default;

  std::set<std::string> hosts;  // empty: any host
  std::set<std::string> racks;  // empty: any rack
  std::optional<Range> x, y;    // unset: any coordinate
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_RING_FILTER_H_
