#include "trainscope/viewer/hilbert_order.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <utility>
#include <vector>

namespace trainscope::viewer {
namespace {

TEST(HilbertIndexTest, ConsecutiveIndicesAreGridNeighboursAndCoverTheGrid) {
  const uint32_t bits = 5, side = 1u << bits;
  std::vector<std::pair<uint32_t, uint32_t>> by_index(side * side, {UINT32_MAX, 0});
  for (uint32_t x = 0; x < side; ++x) {
    for (uint32_t y = 0; y < side; ++y) {
      const uint64_t d = HilbertIndex(bits, x, y);
      ASSERT_LT(d, by_index.size());
      ASSERT_EQ(by_index[d].first, UINT32_MAX) << "two points on index " << d;
      by_index[d] = {x, y};
    }
  }
  for (size_t d = 1; d < by_index.size(); ++d) {
    const int dx =
        std::abs(static_cast<int>(by_index[d].first) - static_cast<int>(by_index[d - 1].first));
    const int dy =
        std::abs(static_cast<int>(by_index[d].second) - static_cast<int>(by_index[d - 1].second));
    EXPECT_EQ(dx + dy, 1) << "index " << d;
  }
}

TEST(HilbertOrderTest, SortsAMeshAlongTheCurve) {
  // A 4 x 4 mesh given row-major: the ring visits it in Hilbert order, so
  // ring neighbours are always mesh neighbours.
  std::vector<HilbertOrder::Device> devices;
  for (uint32_t y = 0; y < 4; ++y)
    for (uint32_t x = 0; x < 4; ++x) devices.push_back({y * 4 + x, {{x, y}}});
  const HilbertOrder::Result r = HilbertOrder::Sort(devices);
  ASSERT_TRUE(r.uses_coordinates);
  ASSERT_EQ(r.order.size(), 16u);
  EXPECT_EQ(r.order.front(), 0u);  // the curve starts at (0, 0)
  for (size_t i = 0; i < r.order.size(); ++i)
    EXPECT_EQ(HilbertIndex(2, r.order[i] % 4, r.order[i] / 4), i);
  for (size_t i = 1; i < r.order.size(); ++i) {
    const int dx =
        std::abs(static_cast<int>(r.order[i] % 4) - static_cast<int>(r.order[i - 1] % 4));
    const int dy =
        std::abs(static_cast<int>(r.order[i] / 4) - static_cast<int>(r.order[i - 1] / 4));
    EXPECT_EQ(dx + dy, 1) << "position " << i;
  }
}

TEST(HilbertOrderTest, AGridSideNotAPowerOfTwoUsesTheNextOne) {
  // A 3 x 1 row: extent 3 needs a 4 x 4 grid (bits 2); on it the curve
  // meets (0,0), (1,0) and, much later, (2,0) ... in that order.
  const HilbertOrder::Result r = HilbertOrder::Sort({{7, {{2, 0}}}, {8, {{0, 0}}}, {9, {{1, 0}}}});
  EXPECT_TRUE(r.uses_coordinates);
  EXPECT_EQ(r.order, (std::vector<size_t>{8, 9, 7}));
}

TEST(HilbertOrderTest, KeepsTheGivenOrderUnlessEveryDeviceHasCoordinates) {
  const HilbertOrder::Result r =
      HilbertOrder::Sort({{5, {{1, 1}}}, {3, std::nullopt}, {4, {{0, 0}}}});
  EXPECT_FALSE(r.uses_coordinates);
  EXPECT_EQ(r.order, (std::vector<size_t>{5, 3, 4}));
  const HilbertOrder::Result empty = HilbertOrder::Sort({});
  EXPECT_FALSE(empty.uses_coordinates);
  EXPECT_TRUE(empty.order.empty());
}

TEST(HilbertOrderTest, DevicesOnOnePointKeepTheirOrder) {
  const HilbertOrder::Result r =
      HilbertOrder::Sort({{2, {{1, 0}}}, {0, {{0, 0}}}, {1, {{1, 0}}}, {3, {{0, 0}}}});
  EXPECT_EQ(r.order, (std::vector<size_t>{0, 3, 2, 1}));
}

}  // namespace
}  // namespace trainscope::viewer
