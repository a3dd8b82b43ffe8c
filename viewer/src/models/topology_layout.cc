#include "trainscope/viewer/topology_layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/traffic_matrix_layout.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

constexpr float kTop = 52;
constexpr Color kHostDiscColor = Rgba(240, 242, 245);
constexpr Color kHostDiscStroke = Rgba(150, 156, 166);

// A straight edge of the given width as a polygon.
std::vector<PointF> Band(PointF a, PointF b, float width) {
  const float dx = b.x - a.x, dy = b.y - a.y;
  const float len = std::max(1e-3f, std::hypot(dx, dy));
  const float nx = -dy / len * width / 2, ny = dx / len * width / 2;
  return {{a.x + nx, a.y + ny}, {b.x + nx, b.y + ny}, {b.x - nx, b.y - ny}, {a.x - nx, a.y - ny}};
}

std::string CellLine(const TrafficModel::Cell& c) {
  if (c.steps == 0) return "nothing";
  return Cat(FormatBytes(static_cast<double>(c.bytes)), " in ", c.messages, " messages, ",
             FormatDuration(static_cast<double>(c.duration_ns)), ", ",
             FormatBytes(c.bytes_per_second()), "/s");
}

}  // namespace

TopologyLayout::TopologyLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends,
                               SelectionState* selection)
    : hierarchy_(hierarchy), trends_(trends), selection_(selection) {}

void TopologyLayout::SetViewport(int width, int height) {
  SetField(&width_, width);
  SetField(&height_, height);
}

void TopologyLayout::SetLevel(ClusterLevel level) { SetField(&level_, level); }

void TopologyLayout::SetWeight(Weight weight) { SetField(&weight_, weight); }

void TopologyLayout::SetAlerts(const std::vector<Alert>& alerts) {
  std::set<uint32_t> ranks;
  std::set<std::pair<uint32_t, uint32_t>> links;
  std::set<uint64_t> cleared;
  for (const Alert& a : alerts)
    if (a.state == AlertState::kCleared && a.alert_id != 0) cleared.insert(a.alert_id);
  for (const Alert& a : alerts) {
    if (a.state != AlertState::kRaised || (a.alert_id != 0 && cleared.count(a.alert_id))) continue;
    if (a.rule == "slow_link" && a.ranks.size() >= 2) {
      links.insert({a.ranks[0], a.ranks[1]});
    } else if (a.cause >= 0) {
      ranks.insert(static_cast<uint32_t>(a.cause));
    }
  }
  SetField(&alert_ranks_, std::move(ranks));
  SetField(&alert_links_, std::move(links));
}

const DrawList& TopologyLayout::Draw() {
  TrafficModel* traffic = hierarchy_->traffic();
  if (dirty_ || built_hierarchy_ != hierarchy_->version() || built_traffic_ != traffic->version() ||
      built_trends_ != trends_->version() || built_selection_ != selection_->devices_version()) {
    Rebuild();
  }
  return list_;
}

std::vector<uint32_t> TopologyLayout::RanksOf(size_t unit) {
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  std::vector<uint32_t> ranks;
  for (size_t d : hierarchy_->units(level_)[unit].devices) ranks.push_back(m.devices[d].rank);
  return ranks;
}

PointF TopologyLayout::DevicePosition(size_t device) {
  Draw();
  return device < device_positions_.size() ? device_positions_[device] : PointF{};
}

void TopologyLayout::Rebuild() {
  dirty_ = false;
  TrafficModel* traffic = hierarchy_->traffic();
  built_hierarchy_ = hierarchy_->version();
  built_traffic_ = traffic->version();
  built_trends_ = trends_->version();
  built_selection_ = selection_->devices_version();
  list_.Clear();
  nodes_.clear();
  edges_.clear();
  const float w = static_cast<float>(width_), h = static_cast<float>(height_);
  list_.backgrounds.push_back({{0, 0, w, h}, kBackgroundColor});
  const TrafficModel::Matrix& m = traffic->matrix();
  const std::vector<ClusterHierarchy::Unit>& units = hierarchy_->units(level_);
  if (m.size() == 0) {
    list_.texts.push_back({w / 2, h / 2, "no devices yet: the job's steps carry no traffic",
                           kTextColor, Text::Align::kCenter});
    return;
  }
  const std::map<uint32_t, UnitTrendModel::DeviceTotals>& totals = trends_->Totals();

  // Slots on the big circle: hosts at the device and host levels, racks at
  // the rack level; racks keep their hosts together with a gap between.
  const ClusterLevel slot_level =
      level_ == ClusterLevel::kRack ? ClusterLevel::kRack : ClusterLevel::kHost;
  const std::vector<ClusterHierarchy::Unit>& slots = hierarchy_->units(slot_level);
  const std::vector<ClusterHierarchy::Unit>& racks = hierarchy_->units(ClusterLevel::kRack);
  const PointF centre{w / 2, kTop + (h - kTop) / 2};
  const float extent = std::min(w, h - kTop) / 2 - 40;
  const size_t s = slots.size();
  const double gap = slot_level == ClusterLevel::kHost && racks.size() > 1 ? 0.5 : 0.0;
  const double units_on_circle = static_cast<double>(s) + gap * static_cast<double>(racks.size());
  float slot_radius;
  float big;
  if (s == 1) {
    big = 0;
    slot_radius = extent;
  } else {
    // Discs as large as their neighbours allow.
    const double step = 2 * kPi / units_on_circle;
    const float ratio = static_cast<float>(std::sin(step / 2)) * 0.92f;
    big = extent / (1 + ratio);
    slot_radius = std::min(big * ratio, extent * 0.45f);
  }
  std::vector<PointF> slot_centre(s);
  {
    double position = 0;
    size_t last_rack = SIZE_MAX;
    for (size_t i = 0; i < s; ++i) {
      const size_t rack = slot_level == ClusterLevel::kHost ? slots[i].parent : i;
      if (last_rack != SIZE_MAX && rack != last_rack) position += gap;
      last_rack = rack;
      slot_centre[i] =
          s == 1 ? centre : OnCircle(centre, big, 2 * kPi * position / units_on_circle);
      position += 1;
    }
  }

  // Node figures: compute per step (area) and efficiency (colour).
  std::vector<double> compute(units.size(), 0), step_time(units.size(), 0);
  std::vector<bool> alert(units.size(), false), selected(units.size(), false);
  for (size_t u = 0; u < units.size(); ++u) {
    for (size_t d : units[u].devices) {
      const uint32_t rank = m.devices[d].rank;
      auto it = totals.find(rank);
      if (it != totals.end()) {
        compute[u] += it->second.compute_ns;
        step_time[u] += it->second.step_time_ns;
      }
      if (alert_ranks_.count(rank)) alert[u] = true;
      if (selection_->IsSelected(rank)) selected[u] = true;
    }
  }
  const double max_compute = *std::max_element(compute.begin(), compute.end());

  // Positions: devices inside their host's disc, other units on the slots.
  device_positions_.assign(m.size(), centre);
  float max_node;
  if (level_ == ClusterLevel::kDevice) {
    size_t most = 1;
    for (const auto& host : slots) most = std::max(most, host.devices.size());
    const float ring = most == 1 ? 0 : slot_radius * 0.62f;
    const float spacing =
        most == 1 ? slot_radius
                  : 2 * ring * static_cast<float>(std::sin(kPi / static_cast<double>(most)));
    max_node = std::clamp(std::min(spacing * 0.45f, slot_radius * 0.3f), 1.5f, 18.0f);
    for (size_t i = 0; i < s; ++i) {
      const auto& devices = slots[i].devices;
      for (size_t k = 0; k < devices.size(); ++k) {
        device_positions_[devices[k]] =
            devices.size() == 1
                ? slot_centre[i]
                : OnCircle(slot_centre[i], ring,
                           2 * kPi * static_cast<double>(k) / static_cast<double>(devices.size()));
      }
    }
  } else {
    max_node = std::clamp(slot_radius * 0.8f, 3.0f, 60.0f);
  }
  std::vector<PointF> unit_centre(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    unit_centre[u] =
        level_ == ClusterLevel::kDevice ? device_positions_[units[u].devices[0]] : slot_centre[u];
  }
  if (level_ != ClusterLevel::kDevice) {
    for (size_t u = 0; u < units.size(); ++u)
      for (size_t d : units[u].devices) device_positions_[d] = unit_centre[u];
  }

  // Host discs (the device level's containers) and their labels.
  const bool label_slots = s <= 64;
  for (size_t i = 0; i < s; ++i) {
    if (level_ == ClusterLevel::kDevice) {
      const bool any_selected =
          std::any_of(slots[i].devices.begin(), slots[i].devices.end(),
                      [&](size_t d) { return selection_->IsSelected(m.devices[d].rank); });
      list_.polygons.push_back({Circle(slot_centre[i], slot_radius, 48), kHostDiscColor,
                                any_selected ? kSelectColor : kHostDiscStroke,
                                any_selected ? 2.0f : 1.0f});
    }
    if (label_slots) {
      const float dy = level_ == ClusterLevel::kDevice ? slot_radius + 10 : max_node + 10;
      list_.texts.push_back({slot_centre[i].x, slot_centre[i].y + dy, slots[i].name, kTextColor,
                             Text::Align::kCenter, level_ == ClusterLevel::kDevice});
    }
  }

  // Edges: unordered unit pairs with traffic, both directions summed.
  const std::vector<TrafficModel::Cell>& cells = hierarchy_->Aggregate(level_);
  const size_t k = units.size();
  auto measure = [&](const TrafficModel::Cell& c) {
    return weight_ == Weight::kBytes ? static_cast<double>(c.bytes)
                                     : static_cast<double>(c.duration_ns);
  };
  std::optional<std::pair<size_t, size_t>> selected_units;
  if (const auto link = selection_->selected_link()) {
    auto a = m.IndexOf(link->first), b = m.IndexOf(link->second);
    if (a && b) selected_units = {hierarchy_->UnitOf(level_, *a), hierarchy_->UnitOf(level_, *b)};
  }
  std::set<std::pair<size_t, size_t>> alert_units;
  for (const auto& [src, dst] : alert_links_) {
    auto a = m.IndexOf(src), b = m.IndexOf(dst);
    if (!a || !b) continue;
    const size_t ua = hierarchy_->UnitOf(level_, *a), ub = hierarchy_->UnitOf(level_, *b);
    alert_units.insert({std::min(ua, ub), std::max(ua, ub)});
  }
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = a + 1; b < k; ++b) {
      const TrafficModel::Cell& f = cells[a * k + b];
      const TrafficModel::Cell& r = cells[b * k + a];
      if (f.steps == 0 && r.steps == 0) continue;
      Edge e;
      e.a = a;
      e.b = b;
      e.forward = f;
      e.backward = r;
      e.weight = measure(f) + measure(r);
      e.cross_host =
          f.locality == LinkLocality::kCrossHost || r.locality == LinkLocality::kCrossHost;
      e.selected = selected_units.has_value() &&
                   std::minmax(selected_units->first, selected_units->second) == std::minmax(a, b);
      edges_.push_back(e);
    }
  }
  std::stable_sort(edges_.begin(), edges_.end(),
                   [](const Edge& x, const Edge& y) { return x.weight > y.weight; });
  const size_t all_edges = edges_.size();
  if (edges_.size() > kMaxEdges) {
    auto keep = std::stable_partition(edges_.begin() + kMaxEdges, edges_.end(),
                                      [](const Edge& e) { return e.selected; });
    edges_.erase(keep, edges_.end());
  }
  const double max_weight = edges_.empty() ? 0 : std::max(1e-9, edges_.front().weight);
  // Lightest first, so the heaviest edge is painted on top.
  for (auto it = edges_.rbegin(); it != edges_.rend(); ++it) {
    Edge& e = *it;
    const double f = e.weight / max_weight;
    e.width = static_cast<float>(1 + 9 * f);
    const PointF pa = unit_centre[e.a], pb = unit_centre[e.b];
    // Edges are polygons painted before the nodes, so nodes stay on top.
    if (e.selected)
      list_.polygons.push_back({Band(pa, pb, e.width + 8), WithAlpha(kSelectColor, 200)});
    if (alert_units.count({e.a, e.b})) {
      list_.polygons.push_back({Band(pa, pb, e.width + 5), WithAlpha(kAlertColor, 110)});
    }
    const Color type = e.cross_host ? kCrossHostEdgeColor : kSameHostEdgeColor;
    const Color color = Mix(type, Rgba(127, 0, 0), f);
    list_.polygons.push_back(
        {Band(pa, pb, e.width), WithAlpha(color, static_cast<uint32_t>(70 + 185 * f))});
  }

  // Nodes.
  for (size_t u = 0; u < units.size(); ++u) {
    Node node;
    node.unit = u;
    node.centre = unit_centre[u];
    node.radius =
        max_compute > 0
            ? std::max(1.5f, max_node * static_cast<float>(std::sqrt(compute[u] / max_compute)))
            : max_node * 0.6f;
    node.efficiency = step_time[u] > 0 ? compute[u] / step_time[u] : 0;
    node.alert = alert[u];
    node.selected = selected[u];
    const Color fill = step_time[u] > 0 ? EfficiencyColor(node.efficiency) : Rgba(176, 190, 197);
    const Color stroke = node.selected ? kSelectColor : node.alert ? kAlertColor : kAxisColor;
    const float stroke_width = node.selected || node.alert ? 2.5f : (node.radius > 4 ? 1.0f : 0.0f);
    list_.polygons.push_back({Circle(node.centre, node.radius, node.radius > 6 ? 24 : 10), fill,
                              stroke_width > 0 ? stroke : 0, stroke_width});
    if (level_ == ClusterLevel::kDevice && node.radius >= 7) {
      list_.texts.push_back({node.centre.x, node.centre.y, Cat(m.devices[units[u].devices[0]].rank),
                             kTextColor, Text::Align::kCenter, false, 7});
    }
    nodes_.push_back(node);
  }

  // Title and legend.
  list_.texts.push_back(
      {8, 14,
       Cat("Topology by ", ClusterLevelName(level_), ": ", units.size(), " ",
           ClusterLevelName(level_), units.size() == 1 ? "" : "s", ", ", all_edges, " links",
           all_edges > edges_.size() ? Cat(" (the ", edges_.size(), " heaviest drawn)") : ""),
       kTextColor, Text::Align::kLeft, true});
  list_.texts.push_back(
      {8, 32,
       Cat("node area = compute per step, colour = efficiency (green busy, red waiting); edge "
           "width = ",
           weight_ == Weight::kBytes ? "bytes" : "transfer time",
           ", teal same host, purple across hosts, dark red heaviest; blue = selected"),
       kAxisColor});
}

std::optional<size_t> TopologyLayout::NodeAt(float x, float y) {
  Draw();
  std::optional<size_t> best;
  float best_d = 1e30f;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const float d = std::hypot(nodes_[i].centre.x - x, nodes_[i].centre.y - y);
    if (d <= std::max(nodes_[i].radius, 3.0f) + 2 && d < best_d) best = i, best_d = d;
  }
  return best;
}

std::optional<size_t> TopologyLayout::EdgeAt(float x, float y) {
  Draw();
  // The heaviest edge wins among those close enough (they are sorted).
  for (size_t i = 0; i < edges_.size(); ++i) {
    const Edge& e = edges_[i];
    const std::vector<PointF> line = {nodes_[e.a].centre, nodes_[e.b].centre};
    if (DistanceToPolyline(line, {x, y}) <= std::max(4.0f, e.width / 2 + 2)) return i;
  }
  return std::nullopt;
}

std::optional<size_t> TopologyLayout::EdgeBetween(size_t a, size_t b) {
  Draw();
  for (size_t i = 0; i < edges_.size(); ++i) {
    if (std::minmax(edges_[i].a, edges_[i].b) == std::minmax(a, b)) return i;
  }
  return std::nullopt;
}

std::string TopologyLayout::TooltipAt(float x, float y) {
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  const auto& units = hierarchy_->units(level_);
  if (const auto n = NodeAt(x, y)) {
    const Node& node = nodes_[*n];
    const ClusterHierarchy::Unit& unit = units[node.unit];
    std::string text = unit.name;
    if (level_ == ClusterLevel::kDevice) text += Cat(" on ", m.devices[unit.devices[0]].host);
    if (level_ != ClusterLevel::kDevice) text += Cat(" (", unit.devices.size(), " devices)");
    const auto& totals = trends_->Totals();
    double compute = 0, step = 0, wait = 0, out = 0, in = 0;
    for (size_t d : unit.devices) {
      auto it = totals.find(m.devices[d].rank);
      if (it == totals.end()) continue;
      compute += it->second.compute_ns;
      step += it->second.step_time_ns;
      wait += it->second.wait_ns;
      out += it->second.bytes_out;
      in += it->second.bytes_in;
    }
    text += Cat("\nper step: compute ", FormatDuration(compute), " of ", FormatDuration(step), " (",
                static_cast<int>(std::lround(node.efficiency * 100)), " % busy), waits ",
                FormatDuration(wait), "\nsent ", FormatBytes(out), ", received ", FormatBytes(in));
    if (node.alert) text += "\nan open alert names it";
    return text;
  }
  if (const auto e = EdgeAt(x, y)) {
    const Edge& edge = edges_[*e];
    return Cat(units[edge.a].name, " <-> ", units[edge.b].name,
               edge.cross_host ? " (across hosts)" : " (same host)", "\n", units[edge.a].name,
               " -> ", units[edge.b].name, ": ", CellLine(edge.forward), "\n", units[edge.b].name,
               " -> ", units[edge.a].name, ": ", CellLine(edge.backward));
  }
  return "";
}

bool TopologyLayout::ClickAt(float x, float y) {
  const uint64_t before = selection_->devices_version();
  if (const auto n = NodeAt(x, y)) {
    selection_->SelectDevices(RanksOf(nodes_[*n].unit));
  } else if (const auto e = EdgeAt(x, y)) {
    const Edge& edge = edges_[*e];
    const auto& units = hierarchy_->units(level_);
    if (level_ == ClusterLevel::kDevice) {
      const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
      const uint32_t a = m.devices[units[edge.a].devices[0]].rank;
      const uint32_t b = m.devices[units[edge.b].devices[0]].rank;
      // The direction that costs more is the link meant.
      const bool forward = edge.forward.duration_ns >= edge.backward.duration_ns;
      selection_->SelectLink(forward ? a : b, forward ? b : a);
    } else {
      std::vector<uint32_t> ranks = RanksOf(edge.a);
      const std::vector<uint32_t> more = RanksOf(edge.b);
      ranks.insert(ranks.end(), more.begin(), more.end());
      selection_->SelectDevices(ranks);
    }
  } else {
    selection_->ClearDevices();
  }
  return selection_->devices_version() != before;
}

bool TopologyLayout::LassoSelect(const std::vector<PointF>& polygon) {
  Draw();
  if (polygon.size() < 3) return false;
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  std::vector<uint32_t> ranks;
  for (size_t d = 0; d < device_positions_.size(); ++d) {
    if (Inside(polygon, device_positions_[d].x, device_positions_[d].y))
      ranks.push_back(m.devices[d].rank);
  }
  if (ranks.empty()) return false;
  selection_->SelectDevices(ranks);
  return true;
}

}  // namespace trainscope::viewer
