// The worker -> host -> rack hierarchy of a job's devices (issue 24.3) and
// the traffic matrix aggregated at any of its levels, for the cluster views
// (topology, chord diagram, Hilbert ring, trends). Devices come from the
// TrafficModel's matrix; a device's rack is, first that names one: its
// host's line in a topology file (--topology: "HOST RACK" lines), the rack
// its own agent said in Hello (DeviceInfo::rack: TRAINSCOPE_RACK or the
// launcher's label, agent/src/launcher_rack.h), the rack another device of
// its host said; a device none places is in the rack "(no rack)" so nothing
// is dropped. Devices are ordered by
// rack, then host, then rank, so every unit of every level is one contiguous
// run of that order (what the ring and chord layouts rely on).
//
// Usage:
//   ClusterHierarchy hierarchy(&traffic);
//   hierarchy.SetRacks({{"node-0", "rack-a"}, {"node-1", "rack-a"}});
//   const auto& hosts = hierarchy.units(ClusterLevel::kHost);
//   std::vector<TrafficModel::Cell> cells = hierarchy.Aggregate(ClusterLevel::kHost);
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_CLUSTER_HIERARCHY_H_
#define TRAINSCOPE_VIEWER_CLUSTER_HIERARCHY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/traffic_model.h"

namespace trainscope::viewer {

enum class ClusterLevel : uint8_t { kDevice = 0, kHost = 1, kRack = 2 };

const char* ClusterLevelName(ClusterLevel level);
// "device", "host" or "rack"; nullopt otherwise.
std::optional<ClusterLevel> ParseClusterLevel(const std::string& text);

class ClusterHierarchy {
 public:
  static constexpr const char* kNoRack = "(no rack)";

  // One node of a level: a device, a host or a rack.
  struct Unit {
    std::string name;
    std::vector<size_t> devices;  // matrix indices, in hierarchy order
    size_t first = 0;             // position of its first device in order()
    size_t parent = 0;            // index of its unit one level up (racks: 0)
  };

  explicit ClusterHierarchy(TrafficModel* traffic);

  // Parses a topology file's text: one "HOST RACK" pair a line, '#' starts
  // a comment. Returns false with `error` naming the bad line otherwise.
  static bool ParseTopology(const std::string& text, std::map<std::string, std::string>* racks,
                            std::string* error);

  // The topology file's host -> rack; merges with earlier calls (a later
  // one wins for a host).
  void SetRacks(const std::map<std::string, std::string>& racks);
  // The racks the devices' agents said (DeviceInfo::rack; empty: none),
  // merged with earlier calls.
  void SetDeviceRacks(const std::vector<DeviceInfo>& devices);

  // Matrix indices in rack, host, rank order.
  const std::vector<size_t>& order();
  const std::vector<Unit>& units(ClusterLevel level);
  // The unit of `level` holding the device at matrix index `device`.
  size_t UnitOf(ClusterLevel level, size_t device);
  // The host's rack: the topology file's, else one its devices said.
  std::string RackOf(const std::string& host) const;
  // k x k cells (row sends, column receives) of the units of `level`: each
  // the sum of the matrix cells between their devices (self-traffic of a
  // unit on the diagonal). `steps` counts the cells summed that had any.
  // Kept until the traffic or the units change (a view re-laid out for a
  // new size reuses it: 1,024 devices are a million cells).
  const std::vector<TrafficModel::Cell>& Aggregate(ClusterLevel level);
  // The (row, column) unit pairs of Aggregate(level) whose cell has any
  // traffic (steps > 0), row-major (by source, then destination), the
  // diagonal included: what a view walks instead of the k x k cells (a
  // 1,024-device ring is a thousand links among a million cells). Kept as
  // long as Aggregate(level) is.
  const std::vector<std::pair<uint32_t, uint32_t>>& Links(ClusterLevel level);

  // Changes whenever the devices or the racks change.
  uint64_t version();
  TrafficModel* traffic() const { return traffic_; }

 private:
  void EnsureBuilt();

  TrafficModel* traffic_;
  std::map<std::string, std::string> racks_;
  std::map<uint32_t, std::string> device_racks_;     // rank -> its agent's
  std::map<std::string, std::string> host_racks_;    // host -> one its devices said
  uint64_t racks_version_ = 0;
  uint64_t built_traffic_version_ = UINT64_MAX;
  uint64_t built_racks_version_ = UINT64_MAX;
  uint64_t version_ = 0;
  std::vector<size_t> order_;
  std::vector<Unit> levels_[3];
  std::vector<size_t> unit_of_[3];  // per level, by matrix index
  std::vector<TrafficModel::Cell> aggregated_[3];
  std::vector<std::pair<uint32_t, uint32_t>> links_[3];
  uint64_t aggregated_version_[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
  uint64_t aggregated_units_[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_CLUSTER_HIERARCHY_H_
