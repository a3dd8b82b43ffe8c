#include "trainscope/viewer/chord_order.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace trainscope::viewer {
namespace {

// Every pair of chords checked directly: no shared end, ends alternating.
uint64_t BruteCrossings(const std::vector<size_t>& position,
                        const std::vector<ChordOrder::Link>& links) {
  uint64_t count = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    for (size_t j = i + 1; j < links.size(); ++j) {
      auto [a, b] = std::minmax(position[links[i].a], position[links[i].b]);
      auto [c, d] = std::minmax(position[links[j].a], position[links[j].b]);
      count += (a < c && c < b && b < d) || (c < a && a < d && d < b);
    }
  }
  return count;
}

TEST(ChordOrderTest, CountsCrossingsAsEveryPairWould) {
  // Two crossing chords, two nested ones, and ones sharing an end.
  const std::vector<size_t> identity = {0, 1, 2, 3};
  EXPECT_EQ(ChordOrder::CountCrossings(identity, {{0, 2, 1}, {1, 3, 1}}), 1u);
  EXPECT_EQ(ChordOrder::CountCrossings(identity, {{0, 3, 1}, {1, 2, 1}}), 0u);
  EXPECT_EQ(ChordOrder::CountCrossings(identity, {{0, 2, 1}, {2, 1, 1}, {0, 3, 1}}), 0u);
  // Pseudo-random chords on 40 units against the brute count.
  uint64_t seed = 12345;
  auto next = [&seed](uint32_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>((seed >> 33) % n);
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<ChordOrder::Link> links;
    for (int i = 0; i < 60; ++i) {
      const uint32_t a = next(40), b = next(40);
      if (a != b) links.push_back({std::min(a, b), std::max(a, b), 1});
    }
    std::sort(links.begin(), links.end(), [](const auto& x, const auto& y) {
      return std::make_pair(x.a, x.b) < std::make_pair(y.a, y.b);
    });
    links.erase(std::unique(links.begin(), links.end(),
                            [](const auto& x, const auto& y) { return x.a == y.a && x.b == y.b; }),
                links.end());
    std::vector<size_t> order(40);
    for (size_t i = 0; i < 40; ++i) order[i] = (i * 7) % 40;  // a scrambled circle
    const std::vector<size_t> position = ChordOrder::Positions(order);
    EXPECT_EQ(ChordOrder::CountCrossings(position, links), BruteCrossings(position, links))
        << "round " << round;
  }
}

// Two racks of two units, a-c and b-d talking: crossed in the plain order,
// uncrossed once b and a (or c and d) swap within their rack.
TEST(ChordOrderTest, ReducesCrossingsWithinGroupsAndKeepsGroupsWhole) {
  const std::vector<ChordOrder::Link> links = {{0, 2, 1}, {1, 3, 1}};
  const std::vector<size_t> group = {0, 0, 1, 1};
  EXPECT_EQ(ChordOrder::CountCrossings({0, 1, 2, 3}, links), 1u);
  const std::vector<size_t> order = ChordOrder::Reduce({0, 1, 2, 3}, group, links);
  EXPECT_EQ(ChordOrder::CountCrossings(ChordOrder::Positions(order), links), 0u);
  EXPECT_EQ(group[order[0]], group[order[1]]);
  EXPECT_EQ(group[order[2]], group[order[3]]);
  // In one group with one unit each, nothing may move: kept as given.
  EXPECT_EQ(ChordOrder::Reduce({0, 1, 2, 3}, {0, 1, 2, 3}, links),
            (std::vector<size_t>{0, 1, 2, 3}));
}

// Hand-made cases that are already as good as the heuristic gets: never
// worse than the order given.
TEST(ChordOrderTest, NeverMoreCrossingsThanTheOrderGiven) {
  const std::vector<size_t> plain = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<std::vector<ChordOrder::Link>> cases = {
      // A ring: no crossing.
      {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {3, 4, 1}, {4, 5, 1}, {5, 6, 1}, {6, 7, 1}, {0, 7, 1}},
      // A star from 0.
      {{0, 2, 5}, {0, 4, 1}, {0, 6, 2}},
      // Every pair (a complete graph crosses whatever the order).
      [] {
        std::vector<ChordOrder::Link> all;
        for (uint32_t a = 0; a < 8; ++a)
          for (uint32_t b = a + 1; b < 8; ++b) all.push_back({a, b, 1.0 + a + b});
        return all;
      }(),
      // Pairs across the circle, heavy and light.
      {{0, 4, 9}, {1, 5, 1}, {2, 6, 3}, {3, 7, 1}},
  };
  for (const std::vector<size_t>& group :
       {std::vector<size_t>(8, 0), std::vector<size_t>{0, 0, 0, 0, 1, 1, 1, 1},
        std::vector<size_t>{0, 0, 1, 1, 2, 2, 3, 3}}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const uint64_t before = ChordOrder::CountCrossings(ChordOrder::Positions(plain), cases[c]);
      const std::vector<size_t> order = ChordOrder::Reduce(plain, group, cases[c]);
      EXPECT_LE(ChordOrder::CountCrossings(ChordOrder::Positions(order), cases[c]), before)
          << "case " << c;
      std::vector<size_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, plain) << "case " << c << ": a permutation";
      for (size_t i = 0; i < 8; ++i) EXPECT_EQ(group[order[i]], group[i]) << "case " << c;
    }
  }
}

}  // namespace
}  // namespace trainscope::viewer
