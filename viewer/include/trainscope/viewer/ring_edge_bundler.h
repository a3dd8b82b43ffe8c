// Which of the Hilbert ring's edges are drawn alone and which join a bundle
// (issue 24.4): with more than bundle_above edges, the thin ones (under
// thin_edge_px wide, or past the max_edges heaviest) join one bundle per
// pair of parent units, so a frame costs what can be seen; the heaviest and
// the selected edge are always drawn alone, and thin ones past max_edges
// are dropped unless bundled. Each bundle's ends are the circular mean of
// its edges' end angles (inside one parent: a loop from the lowest to the
// highest angle). Pure: the ring routes and paints what it returns.
//
// Usage:
//   RingEdgeBundler::Result r = RingEdgeBundler::Split(edges, options);
//   for (size_t i : r.alone) Draw(edges[i], r.WidthOf(edges[i].weight));
//   for (const RingEdgeBundler::Bundle& b : r.bundles) Draw(b.angle_a, b.angle_b);
//
// Threading: stateless; safe from any thread.
#ifndef TRAINSCOPE_VIEWER_RING_EDGE_BUNDLER_H_
#define TRAINSCOPE_VIEWER_RING_EDGE_BUNDLER_H_

#include <cstddef>
#include <vector>

namespace trainscope::viewer {

class RingEdgeBundler {
 public:
  struct Options {
    size_t max_edges = 3000;
    size_t bundle_above = 256;
    float thin_edge_px = 2;
  };
  // An edge between two units, heaviest first in the input.
  struct Edge {
    size_t parent_a = 0, parent_b = 0;  // the units one level up of its ends
    double angle_a = 0, angle_b = 0;    // where its ends leave the ring (radians)
    double weight = 0;
    bool selected = false;
  };
  struct Bundle {
    size_t a = 0, b = 0;  // parent units, a <= b
    size_t flows = 0;
    double weight = 0;                // all its edges'
    double angle_a = 0, angle_b = 0;  // its ends on the ring (of a, of b)
  };
  struct Result {
    std::vector<size_t> alone;  // indices of the edges drawn alone, heaviest first
    std::vector<Bundle> bundles;
    double max_weight = 1;  // the heaviest edge's (never 0)
    float thin_edge_px = 2;

    // An edge's width: 1 to 8 pixels by weight; under thin_edge_px a
    // hairline, which Qt strokes with its fast line drawer (a wider one
    // costs ten times as much: 1,024 devices, 12 ms of a frame).
    float WidthOf(double weight) const;
  };

  static Result Split(const std::vector<Edge>& edges, const Options& options);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_RING_EDGE_BUNDLER_H_
