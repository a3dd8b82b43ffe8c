#include "trainscope/viewer/ring_edge_bundler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "trainscope/viewer/cluster_geometry.h"

namespace trainscope::viewer {

float RingEdgeBundler::Result::WidthOf(double weight) const {
  const float width = static_cast<float>(1 + 7 * weight / max_weight);
  return width < thin_edge_px ? 1.0f : width;
}

RingEdgeBundler::Result RingEdgeBundler::Split(const std::vector<Edge>& edges,
                                               const Options& options) {
  Result result;
  result.thin_edge_px = options.thin_edge_px;
  result.max_weight = edges.empty() ? 1 : std::max(1e-9, edges.front().weight);
  const bool bundling = edges.size() > options.bundle_above;
  struct Side {
    double sx = 0, sy = 0;
  };
  std::vector<std::pair<Side, Side>> sides;      // per bundle: its a and b ends
  std::vector<std::pair<double, double>> spans;  // per bundle: its lowest and highest angle
  std::map<std::pair<size_t, size_t>, size_t> bundle_of;
  result.alone.reserve(std::min(edges.size(), options.max_edges));
  for (size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    const bool thin = result.WidthOf(e.weight) <= 1 || i >= options.max_edges;
    if (i == 0 || e.selected || !(bundling && thin)) {
      if (i < options.max_edges || e.selected) result.alone.push_back(i);
      continue;
    }
    size_t pa = e.parent_a, pb = e.parent_b;
    double angle_a = e.angle_a, angle_b = e.angle_b;
    if (pa > pb) std::swap(pa, pb), std::swap(angle_a, angle_b);
    auto [it, added] = bundle_of.emplace(std::make_pair(pa, pb), result.bundles.size());
    if (added) {
      Bundle b;
      b.a = pa;
      b.b = pb;
      result.bundles.push_back(b);
      sides.emplace_back();
      spans.emplace_back(1e9, -1e9);
    }
    Bundle& b = result.bundles[it->second];
    b.flows += 1;
    b.weight += e.weight;
    auto& [side_a, side_b] = sides[it->second];
    side_a.sx += std::sin(angle_a), side_a.sy += std::cos(angle_a);
    side_b.sx += std::sin(angle_b), side_b.sy += std::cos(angle_b);
    auto& [lo, hi] = spans[it->second];
    for (double angle : {angle_a, angle_b}) {
      if (angle < 0) angle += 2 * kPi;
      lo = std::min(lo, angle), hi = std::max(hi, angle);
    }
  }
  for (size_t i = 0; i < result.bundles.size(); ++i) {
    Bundle& b = result.bundles[i];
    if (b.a == b.b) {
      // Inside one parent: a loop from its members' first to last end.
      b.angle_a = spans[i].first;
      b.angle_b = spans[i].second;
    } else {
      const auto& [side_a, side_b] = sides[i];
      b.angle_a = std::atan2(side_a.sx, side_a.sy);
      b.angle_b = std::atan2(side_b.sx, side_b.sy);
    }
  }
  return result;
}

}  // namespace trainscope::viewer
