#include "gpu/collective_launch_table.h"

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST(CollectiveLaunchTableTest, LooksUpRecentLaunchesAndForgetsOldOnes) {
  CollectiveLaunchTable table(2);
  GpuCollectiveLaunch launch;
  launch.group = 3;
  launch.group_sequence = 10;
  launch.bytes = 4096;
  launch.kind = CollectiveKind::kAllGather;
  const uint64_t first = table.Register(launch);
  launch.group_sequence = 11;
  const uint64_t second = table.Register(launch);
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(second, 2u);
  ASSERT_TRUE(table.Lookup(first).has_value());
  EXPECT_EQ(table.Lookup(first)->group_sequence, 10u);
  EXPECT_EQ(table.Lookup(second)->bytes, 4096u);
  launch.group_sequence = 12;
  const uint64_t third = table.Register(launch);  // takes the first's slot
  EXPECT_FALSE(table.Lookup(first).has_value());
  EXPECT_EQ(table.Lookup(third)->group_sequence, 12u);
  EXPECT_FALSE(table.Lookup(0).has_value());
  EXPECT_FALSE(table.Lookup(99).has_value());
}

}  // namespace
}  // namespace trainscope::agent
