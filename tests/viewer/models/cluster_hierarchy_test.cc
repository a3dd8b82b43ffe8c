#include "trainscope/viewer/cluster_hierarchy.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "trainscope/viewer/synthetic_job.h"

namespace trainscope::viewer {
namespace {

PairTrafficRecord Pair(uint32_t src, uint32_t dst, uint64_t bytes, int64_t ns) {
  PairTrafficRecord t;
  t.src_rank = src;
  t.dst_rank = dst;
  t.bytes = bytes;
  t.duration_ns = ns;
  t.messages = 1;
  return t;
}

TEST(ClusterHierarchyTest, ParsesTopologyAndNamesBadLines) {
  std::map<std::string, std::string> racks;
  std::string error;
  ASSERT_TRUE(ClusterHierarchy::ParseTopology("# host rack\nnode-0 r1\n\n node-1  r2 # x\n", &racks,
                                              &error))
      << error;
  EXPECT_EQ(racks.size(), 2u);
  EXPECT_EQ(racks["node-1"], "r2");
  EXPECT_FALSE(ClusterHierarchy::ParseTopology("node-0 r1\nnode-1\n", &racks, &error));
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_NE(error.find("HOST RACK"), std::string::npos) << error;
  EXPECT_FALSE(ClusterHierarchy::ParseTopology("a b c\n", &racks, &error));
}

// Racks by precedence: the topology file's line for the host, the rack the
// device's own agent said, one another device of its host said.
TEST(ClusterHierarchyTest, RacksComeFromTheFileThenTheDeviceThenItsHost) {
  TrafficModel traffic;
  traffic.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}, {3, 0, "b"}, {4, 0, "c"}});
  ClusterHierarchy h(&traffic);
  h.SetDeviceRacks({{0, 0, "a", "r0"},
                    {1, 0, "a", "r1"},
                    {2, 0, "b", "r1"},
                    {3, 0, "b", ""},
                    {4, 0, "c", "r9"}});
  auto members = [&] {
    std::map<std::string, std::set<uint32_t>> out;
    for (const auto& rack : h.units(ClusterLevel::kRack)) {
      for (size_t d : rack.devices) out[rack.name].insert(traffic.matrix().devices[d].rank);
    }
    return out;
  };
  // Host a's two devices in two racks: two host units, one under each.
  EXPECT_EQ(members(), (std::map<std::string, std::set<uint32_t>>{
                           {"r0", {0}}, {"r1", {1, 2, 3}}, {"r9", {4}}}));
  EXPECT_EQ(h.units(ClusterLevel::kHost).size(), 4u);
  EXPECT_EQ(h.RackOf("b"), "r1");
  const uint64_t version = h.version();
  h.SetRacks({{"c", "r2"}});  // the file wins for the hosts it names
  EXPECT_NE(h.version(), version);
  EXPECT_EQ(members(), (std::map<std::string, std::set<uint32_t>>{
                           {"r0", {0}}, {"r1", {1, 2, 3}}, {"r2", {4}}}));
  EXPECT_EQ(h.RackOf("c"), "r2");
  EXPECT_EQ(h.RackOf("z"), ClusterHierarchy::kNoRack);
}

TEST(ClusterHierarchyTest, UnitsAreContiguousRunsByRackHostRank) {
  TrafficModel traffic;
  // Hosts listed out of rack order: b in rack r0, a and c in r1.
  traffic.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}, {3, 0, "c"}, {4, 0, "b"}});
  ClusterHierarchy h(&traffic);
  h.SetRacks({{"a", "r1"}, {"b", "r0"}, {"c", "r1"}});
  const auto& racks = h.units(ClusterLevel::kRack);
  const auto& hosts = h.units(ClusterLevel::kHost);
  ASSERT_EQ(racks.size(), 2u);
  EXPECT_EQ(racks[0].name, "r0");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "b");
  EXPECT_EQ(hosts[1].name, "a");
  EXPECT_EQ(hosts[1].parent, 1u);
  EXPECT_EQ(h.units(ClusterLevel::kDevice).size(), 5u);
  // Every unit of every level is a contiguous run of order().
  const auto& order = h.order();
  for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost, ClusterLevel::kRack}) {
    for (const auto& unit : h.units(level)) {
      for (size_t k = 0; k < unit.devices.size(); ++k)
        EXPECT_EQ(order[unit.first + k], unit.devices[k]);
    }
  }
  // A host no one places is in the no-rack rack, not dropped.
  traffic.SetDevices({{9, 0, "z"}});
  EXPECT_EQ(h.units(ClusterLevel::kRack).size(), 3u);
  EXPECT_EQ(h.RackOf("z"), ClusterHierarchy::kNoRack);
}

TEST(ClusterHierarchyTest, HostsFollowTheirNumbersNotTheirSpelling) {
  TrafficModel traffic;
  traffic.SetDevices({{0, 0, "node-10"}, {1, 0, "node-2"}, {2, 0, "node-1"}});
  ClusterHierarchy h(&traffic);
  const auto& hosts = h.units(ClusterLevel::kHost);
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "node-1");
  EXPECT_EQ(hosts[1].name, "node-2");
  EXPECT_EQ(hosts[2].name, "node-10");
}

TEST(ClusterHierarchyTest, AggregatedCellsAreSumsOfTheirPairs) {
  TrafficModel traffic;
  traffic.SetDevices({{0, 0, "a"}, {1, 0, "a"}, {2, 0, "b"}, {3, 0, "b"}});
  StepRecord step;
  step.step = 1;
  step.traffic = {Pair(0, 1, 10, 1), Pair(0, 2, 100, 10), Pair(1, 3, 1000, 100), Pair(2, 0, 5, 2),
                  Pair(3, 2, 7, 3)};
  step.traffic[1].locality = LinkLocality::kCrossHost;
  traffic.AddStep(step);
  ClusterHierarchy h(&traffic);
  const auto cells = h.Aggregate(ClusterLevel::kHost);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0 * 2 + 1].bytes, 1100u);  // a -> b
  EXPECT_EQ(cells[0 * 2 + 1].duration_ns, 110);
  EXPECT_EQ(cells[0 * 2 + 1].locality, LinkLocality::kCrossHost);
  EXPECT_EQ(cells[1 * 2 + 0].bytes, 5u);  // b -> a
  EXPECT_EQ(cells[0].bytes, 10u);         // a's self-traffic
  EXPECT_EQ(cells[3].bytes, 7u);
  // The device level is the matrix itself; totals agree at every level.
  uint64_t total[3] = {0, 0, 0};
  for (int l = 0; l < 3; ++l)
    for (const auto& c : h.Aggregate(static_cast<ClusterLevel>(l))) total[l] += c.bytes;
  EXPECT_EQ(total[0], 1122u);
  EXPECT_EQ(total[1], total[0]);
  EXPECT_EQ(total[2], total[0]);
  // Kept until the traffic changes, then recomputed.
  EXPECT_EQ(h.Aggregate(ClusterLevel::kHost)[1].bytes, 1100u);
  StepRecord next;
  next.step = 2;
  next.traffic = {Pair(0, 2, 1, 1)};
  traffic.AddStep(next);
  EXPECT_EQ(h.Aggregate(ClusterLevel::kHost)[1].bytes, 1101u);
}

TEST(ClusterHierarchyTest, SyntheticThousandDevicesAggregateByLevel) {
  SyntheticJobOptions options;
  options.devices = 1024;
  options.hosts = 128;
  options.racks = 8;
  options.steps = 2;
  options.compute_ops_per_step = 2;
  options.collectives_per_step = 1;
  options.straggler.reset();
  const SyntheticJob job = GenerateSyntheticJob(options);
  TrafficModel traffic;
  traffic.SetDevices(job.devices);
  for (const StepRecord& s : job.steps) traffic.AddStep(s);
  ClusterHierarchy h(&traffic);
  std::map<std::string, std::string> racks;
  for (const auto& d : job.devices) racks[d.host] = d.rack;
  h.SetRacks(racks);
  EXPECT_EQ(h.units(ClusterLevel::kDevice).size(), 1024u);
  EXPECT_EQ(h.units(ClusterLevel::kHost).size(), 128u);
  EXPECT_EQ(h.units(ClusterLevel::kRack).size(), 8u);
  for (const auto& rack : h.units(ClusterLevel::kRack)) EXPECT_EQ(rack.devices.size(), 128u);
  uint64_t device_bytes = 0, rack_bytes = 0;
  for (const auto& c : h.Aggregate(ClusterLevel::kDevice)) device_bytes += c.bytes;
  for (const auto& c : h.Aggregate(ClusterLevel::kRack)) rack_bytes += c.bytes;
  EXPECT_GT(device_bytes, 0u);
  EXPECT_EQ(rack_bytes, device_bytes);
}

}  // namespace
}  // namespace trainscope::viewer
