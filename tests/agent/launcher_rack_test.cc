#include "launcher_rack.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

std::string RackOf(const std::map<std::string, std::string>& env) {
  return LauncherRack::FromLookup([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LauncherRackTest, NothingSetIsUnknown) { EXPECT_EQ(RackOf({}), ""); }

TEST(LauncherRackTest, TrainscopeRackWinsOverSlurm) {
  EXPECT_EQ(RackOf({{"TRAINSCOPE_RACK", " rack-a "},
                    {"SLURM_TOPOLOGY_ADDR", "s0.s1.node3"},
                    {"SLURM_TOPOLOGY_ADDR_PATTERN", "switch.switch.node"}}),
            "rack-a");
  // Blank is unset: Slurm's label is used.
  EXPECT_EQ(RackOf({{"TRAINSCOPE_RACK", "  "}, {"SLURM_TOPOLOGY_ADDR", "s0.s1.node3"}}), "s1");
}

TEST(LauncherRackTest, SlurmLeafSwitchFromThePattern) {
  EXPECT_EQ(RackOf({{"SLURM_TOPOLOGY_ADDR", "top.leaf4.node12"},
                    {"SLURM_TOPOLOGY_ADDR_PATTERN", "switch.switch.node"}}),
            "leaf4");
  // topology/block: "block.node".
  EXPECT_EQ(
      RackOf({{"SLURM_TOPOLOGY_ADDR", "b2.node12"}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "block.node"}}),
      "b2");
}

TEST(LauncherRackTest, SlurmWithoutPatternTakesThePartBeforeTheNode) {
  EXPECT_EQ(RackOf({{"SLURM_TOPOLOGY_ADDR", "s0.s5.node1"}}), "s5");
  // A pattern that does not match the address is ignored, not trusted.
  EXPECT_EQ(RackOf({{"SLURM_TOPOLOGY_ADDR", "s0.s5.node1"},
                    {"SLURM_TOPOLOGY_ADDR_PATTERN", "switch.node"}}),
            "s5");
  // No topology plugin: the address is the node alone, no rack.
  EXPECT_EQ(RackOf({{"SLURM_TOPOLOGY_ADDR", "node1"}}), "");
  EXPECT_EQ(RackOf({{"SLURM_TOPOLOGY_ADDR", "node1"}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "node"}}),
            "");
}

}  // namespace
}  // namespace trainscope::agent
