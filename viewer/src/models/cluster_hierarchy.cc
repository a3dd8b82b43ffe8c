#include "trainscope/viewer/cluster_hierarchy.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <sstream>
#include <tuple>

namespace trainscope::viewer {
namespace {

// Runs of digits compare by value, the rest by character.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string da = a.substr(i, ie - i), db = b.substr(j, je - j);
      const size_t za = da.find_first_not_of('0'), zb = db.find_first_not_of('0');
      const std::string va = za == std::string::npos ? "" : da.substr(za);
      const std::string vb = zb == std::string::npos ? "" : db.substr(zb);
      if (va.size() != vb.size()) return va.size() < vb.size();
      if (va != vb) return va < vb;
      i = ie, j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

const char* ClusterLevelName(ClusterLevel level) {
  switch (level) {
    case ClusterLevel::kDevice:
      return "device";
    case ClusterLevel::kHost:
      return "host";
    case ClusterLevel::kRack:
      return "rack";
  }
  return "?";
}

std::optional<ClusterLevel> ParseClusterLevel(const std::string& text) {
  for (ClusterLevel level : {ClusterLevel::kDevice, ClusterLevel::kHost, ClusterLevel::kRack}) {
    if (text == ClusterLevelName(level)) return level;
  }
  return std::nullopt;
}

ClusterHierarchy::ClusterHierarchy(TrafficModel* traffic) : traffic_(traffic) {}

bool ClusterHierarchy::ParseTopology(const std::string& text,
                                     std::map<std::string, std::string>* racks,
                                     std::string* error) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host, rack, extra;
    if (!(words >> host)) continue;  // blank or comment
    if (!(words >> rack) || (words >> extra)) {
      *error = "line " + std::to_string(number) + " '" + line +
               "': expected 'HOST RACK' (two words; '#' starts a comment)";
      return false;
    }
    (*racks)[host] = rack;
  }
  return true;
}

void ClusterHierarchy::SetRacks(const std::map<std::string, std::string>& racks) {
  bool changed = false;
  for (const auto& [host, rack] : racks) {
    if (rack.empty()) continue;
    auto [it, inserted] = racks_.try_emplace(host, rack);
    if (!inserted && it->second == rack) continue;
    it->second = rack;
    changed = true;
  }
  if (changed) ++racks_version_;
}

void ClusterHierarchy::SetDeviceRacks(const std::vector<DeviceInfo>& devices) {
  bool changed = false;
  for (const DeviceInfo& d : devices) {
    if (d.rack.empty()) continue;
    if (!d.host.empty()) host_racks_[d.host] = d.rack;
    auto [it, inserted] = device_racks_.try_emplace(d.rank, d.rack);
    if (!inserted && it->second == d.rack) continue;
    it->second = d.rack;
    changed = true;
  }
  if (changed) ++racks_version_;
}

std::string ClusterHierarchy::RackOf(const std::string& host) const {
  if (auto it = racks_.find(host); it != racks_.end()) return it->second;
  auto it = host_racks_.find(host);
  return it == host_racks_.end() ? kNoRack : it->second;
}

uint64_t ClusterHierarchy::version() {
  EnsureBuilt();
  return version_;
}

const std::vector<size_t>& ClusterHierarchy::order() {
  EnsureBuilt();
  return order_;
}

const std::vector<ClusterHierarchy::Unit>& ClusterHierarchy::units(ClusterLevel level) {
  EnsureBuilt();
  return levels_[static_cast<int>(level)];
}

size_t ClusterHierarchy::UnitOf(ClusterLevel level, size_t device) {
  EnsureBuilt();
  return unit_of_[static_cast<int>(level)][device];
}

void ClusterHierarchy::EnsureBuilt() {
  const TrafficModel::Matrix& m = traffic_->matrix();
  if (built_traffic_version_ == traffic_->version() && built_racks_version_ == racks_version_) {
    return;
  }
  // Rebuild only when the device set or a rack changed: a new step of
  // traffic keeps the units (and the views' cached layouts) as they are.
  std::vector<std::tuple<std::string, std::string, uint32_t, size_t>> keyed;
  keyed.reserve(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string& host = m.devices[i].host;
    const auto file = racks_.find(host);
    const auto own = device_racks_.find(m.devices[i].rank);
    keyed.emplace_back(file != racks_.end()         ? file->second
                       : own != device_racks_.end() ? own->second
                                                    : RackOf(host),
                       host, m.devices[i].rank, i);
  }
  // Names in natural order (node-2 before node-10), so rings and chords
  // follow the machine's numbering.
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return NaturalLess(std::get<0>(a), std::get<0>(b));
    if (std::get<1>(a) != std::get<1>(b)) return NaturalLess(std::get<1>(a), std::get<1>(b));
    return std::get<2>(a) < std::get<2>(b);
  });
  std::vector<size_t> order;
  order.reserve(keyed.size());
  for (const auto& k : keyed) order.push_back(std::get<3>(k));
  const bool same = built_traffic_version_ != UINT64_MAX && order == order_ &&
                    built_racks_version_ == racks_version_;
  built_traffic_version_ = traffic_->version();
  built_racks_version_ = racks_version_;
  if (same) return;
  order_ = std::move(order);
  ++version_;
  for (int l = 0; l < 3; ++l) {
    levels_[l].clear();
    unit_of_[l].assign(m.size(), 0);
  }
  for (size_t pos = 0; pos < keyed.size(); ++pos) {
    const auto& [rack, host, rank, device] = keyed[pos];
    const std::string host_name = host.empty() ? "(unknown host)" : host;
    // Racks and hosts start a new unit when their name changes along the
    // order; a host is keyed by rack too (the same name in two racks is two
    // hosts as far as the layout goes).
    if (levels_[2].empty() || levels_[2].back().name != rack) {
      levels_[2].push_back({rack, {}, pos, 0});
    }
    const size_t rack_index = levels_[2].size() - 1;
    if (levels_[1].empty() || levels_[1].back().name != host_name ||
        levels_[1].back().parent != rack_index) {
      levels_[1].push_back({host_name, {}, pos, rack_index});
    }
    const size_t host_index = levels_[1].size() - 1;
    levels_[0].push_back({"rank " + std::to_string(rank), {device}, pos, host_index});
    levels_[1][host_index].devices.push_back(device);
    levels_[2][rack_index].devices.push_back(device);
    unit_of_[0][device] = levels_[0].size() - 1;
    unit_of_[1][device] = host_index;
    unit_of_[2][device] = rack_index;
  }
}

const std::vector<TrafficModel::Cell>& ClusterHierarchy::Aggregate(ClusterLevel level) {
  EnsureBuilt();
  const int l = static_cast<int>(level);
  std::vector<TrafficModel::Cell>& out = aggregated_[l];
  if (aggregated_version_[l] == traffic_->version() && aggregated_units_[l] == version_) return out;
  aggregated_version_[l] = traffic_->version();
  aggregated_units_[l] = version_;
  const TrafficModel::Matrix& m = traffic_->matrix();
  const std::vector<size_t>& unit_of = unit_of_[l];
  const size_t k = levels_[l].size();
  const size_t n = m.size();
  out.assign(k * k, TrafficModel::Cell{});
  for (size_t i = 0; i < n; ++i) {
    const size_t a = unit_of[i] * k;
    for (size_t j = 0; j < n; ++j) {
      const TrafficModel::Cell& c = m.cells[i * n + j];
      if (c.steps == 0) continue;
      TrafficModel::Cell& o = out[a + unit_of[j]];
      o.bytes += c.bytes;
      o.messages += c.messages;
      o.duration_ns += c.duration_ns;
      o.steps += 1;
      o.exact = o.exact || c.exact;
      // The farthest locality summed in: a host pair is across hosts.
      if (static_cast<int>(c.locality) > static_cast<int>(o.locality)) o.locality = c.locality;
    }
  }
  std::vector<std::pair<uint32_t, uint32_t>>& links = links_[l];
  links.clear();
  for (size_t a = 0; a < k; ++a)
    for (size_t b = 0; b < k; ++b)
      if (out[a * k + b].steps != 0)
        links.emplace_back(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  return out;
}

const std::vector<std::pair<uint32_t, uint32_t>>& ClusterHierarchy::Links(ClusterLevel level) {
  Aggregate(level);
  return links_[static_cast<int>(level)];
}

}  // namespace trainscope::viewer
