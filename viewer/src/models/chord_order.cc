#include "trainscope/viewer/chord_order.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainscope/viewer/cluster_geometry.h"

namespace trainscope::viewer {

std::vector<size_t> ChordOrder::Positions(const std::vector<size_t>& order) {
  std::vector<size_t> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  return position;
}

uint64_t ChordOrder::CountCrossings(const std::vector<size_t>& position,
                                    const std::vector<Link>& links) {
  // Cut the circle at position 0: chords (l1, h1) and (l2, h2) cross iff
  // l1 < l2 < h1 < h2. By increasing l, a Fenwick tree over the h of the
  // chords started strictly before counts those ending inside (l2, h2).
  std::vector<std::pair<size_t, size_t>> chords;
  chords.reserve(links.size());
  for (const Link& link : links) {
    const auto [lo, hi] = std::minmax(position[link.a], position[link.b]);
    if (lo != hi) chords.emplace_back(lo, hi);
  }
  std::sort(chords.begin(), chords.end());
  chords.erase(std::unique(chords.begin(), chords.end()), chords.end());
  const size_t n = position.size();
  std::vector<uint64_t> tree(n + 1, 0);
  auto add = [&](size_t i) {
    for (++i; i <= n; i += i & (~i + 1)) ++tree[i];
  };
  auto below = [&](size_t i) {  // how many h < i
    uint64_t sum = 0;
    for (; i > 0; i -= i & (~i + 1)) sum += tree[i];
    return sum;
  };
  uint64_t crossings = 0;
  for (size_t i = 0; i < chords.size();) {
    size_t j = i;
    for (; j < chords.size() && chords[j].first == chords[i].first; ++j) {
      const auto [l, h] = chords[j];
      crossings += below(h) - below(l + 1);
    }
    for (; i < j; ++i) add(chords[i].second);
  }
  return crossings;
}

std::vector<size_t> ChordOrder::Reduce(std::vector<size_t> order, const std::vector<size_t>& group,
                                       const std::vector<Link>& links, int sweeps) {
  const size_t k = order.size();
  if (k < 3 || links.empty()) return order;
  std::vector<std::vector<std::pair<size_t, double>>> partners(k);
  for (const Link& link : links) {
    partners[link.a].emplace_back(link.b, link.weight);
    partners[link.b].emplace_back(link.a, link.weight);
  }
  std::vector<size_t> best = order;
  uint64_t fewest = CountCrossings(Positions(order), links);
  std::vector<size_t> position = Positions(order);
  const double step = 2 * kPi / static_cast<double>(k);
  auto angle = [&](size_t u) { return (static_cast<double>(position[u]) + 0.5) * step; };
  for (int sweep = 0; sweep < sweeps && fewest > 0; ++sweep) {
    // Run by run, each seeing the runs before it already moved (all at
    // once, two runs that talk swap towards each other's old places and
    // cross again).
    for (size_t start = 0; start < k;) {
      size_t end = start + 1;
      while (end < k && group[order[end]] == group[order[start]]) ++end;
      // By the barycentre's angle from the run's middle (wrapped to
      // -pi..pi); a unit with no traffic keeps its own angle.
      const double middle = (static_cast<double>(start + end) / 2) * step;
      std::vector<std::pair<double, size_t>> keyed;
      for (size_t i = start; i < end; ++i) {
        const size_t u = order[i];
        double sx = 0, sy = 0;
        for (const auto& [v, weight] : partners[u]) {
          sx += weight * std::sin(angle(v));
          sy += weight * std::cos(angle(v));
        }
        const double toward = sx == 0 && sy == 0 ? angle(u) : std::atan2(sx, sy);
        keyed.emplace_back(std::remainder(toward - middle, 2 * kPi), u);
      }
      std::stable_sort(keyed.begin(), keyed.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t i = start; i < end; ++i) {
        order[i] = keyed[i - start].second;
        position[order[i]] = i;
      }
      start = end;
    }
    const uint64_t crossings = CountCrossings(position, links);
    if (crossings < fewest) {
      fewest = crossings;
      best = order;
    }
  }
  return best;
}

}  // namespace trainscope::viewer
