// The order of a chord diagram's units around its circle (issue 24.3,
// GiViP's crossing-reducing order): each unit moves within its parent's run
// (a host's devices stay together, a rack's hosts too, so the ancestor
// rings stay whole) towards the barycentre of the units it talks to,
// weighted by their traffic, a few sweeps of the classic barycentre
// heuristic on a circle. Crossings are counted exactly after each sweep and
// the order with the fewest is kept, so the result never crosses more than
// the order it started from.
//
// Usage:
//   std::vector<ChordOrder::Link> links = {{0, 2, 5.0}, {1, 3, 1.0}};
//   std::vector<size_t> order = ChordOrder::Reduce({0, 1, 2, 3}, {0, 0, 0, 0}, links);
//   uint64_t crossings = ChordOrder::CountCrossings(ChordOrder::Positions(order), links);
//
// Threading: static functions on values; no shared state.
#ifndef TRAINSCOPE_VIEWER_CHORD_ORDER_H_
#define TRAINSCOPE_VIEWER_CHORD_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainscope::viewer {

class ChordOrder {
 public:
  // Traffic between two units, either direction (a != b).
  struct Link {
    uint32_t a = 0, b = 0;
    double weight = 0;
  };

  // position[u]: where unit u sits in `order`.
  static std::vector<size_t> Positions(const std::vector<size_t>& order);
  // Pairs of chords that cross inside the circle: no end shared and their
  // ends alternate around it. O(L log L) for L links (a 1,024-device ring:
  // a thousand chords, a million pairs never walked).
  static uint64_t CountCrossings(const std::vector<size_t>& position,
                                 const std::vector<Link>& links);
  // `order`: the units in circle order; group[u]: its parent, each group one
  // contiguous run of `order` (kept so: units move only within their run).
  static std::vector<size_t> Reduce(std::vector<size_t> order, const std::vector<size_t>& group,
                                    const std::vector<Link>& links, int sweeps = 6);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_CHORD_ORDER_H_
