#include "gpu/activity_buffer_pool.h"

#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST(ActivityBufferPoolTest, NeverMoreThanMaxBuffersAndRefusalsCounted) {
  ActivityBufferPool pool(1000, 2);  // rounded up to a multiple of 8
  EXPECT_EQ(pool.buffer_bytes(), 1000u);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % ActivityBufferPool::kAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % ActivityBufferPool::kAlignment, 0u);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);
  EXPECT_EQ(pool.in_use(), 2u);
  pool.Release(a);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.Acquire(), a);  // reused, not allocated anew
  EXPECT_EQ(pool.allocated(), 2u);
}

TEST(ActivityBufferPoolTest, SizesAreRoundedAndForeignReleasesIgnored) {
  ActivityBufferPool pool(1001, 1);
  EXPECT_EQ(pool.buffer_bytes(), 1008u);
  uint8_t* a = pool.Acquire();
  uint8_t other[16];
  pool.Release(other);
  pool.Release(a);
  pool.Release(a);  // twice
  EXPECT_EQ(pool.foreign_releases(), 2u);
  EXPECT_EQ(pool.in_use(), 0u);
  pool.Release(nullptr);
  EXPECT_EQ(pool.foreign_releases(), 2u);
}

TEST(ActivityBufferPoolTest, ReclaimAllTakesBackBuffersThatNeverCameBack) {
  ActivityBufferPool pool(64, 2);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  ASSERT_NE(b, nullptr);
  pool.Release(a);
  EXPECT_EQ(pool.ReclaimAll(), 1u);  // b went elsewhere
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.reclaimed(), 1u);
  EXPECT_NE(pool.Acquire(), nullptr);
  EXPECT_NE(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);  // still two in all
  EXPECT_EQ(pool.allocated(), 2u);
}

}  // namespace
}  // namespace trainscope::agent
