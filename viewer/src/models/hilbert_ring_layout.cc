#include "trainscope/viewer/hilbert_ring_layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "absl/status/statusor.h"
#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/hilbert_order.h"
#include "trainscope/viewer/ring_edge_bundler.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace

HilbertRingLayout::HilbertRingLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends,
                                     SelectionState* selection)
    : hierarchy_(hierarchy), trends_(trends), selection_(selection) {}

void HilbertRingLayout::SetViewport(int width, int height) {
  SetField(&width_, width);
  SetField(&height_, height);
}

void HilbertRingLayout::SetLevel(ClusterLevel level) { SetField(&level_, level); }

void HilbertRingLayout::SetCoordinates(
    const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& coordinates) {
  SetField(&coordinates_, coordinates);
}

void HilbertRingLayout::SetAlerts(const std::vector<Alert>& alerts) {
  std::set<uint32_t> ranks;
  for (const Alert& a : alerts)
    if (a.state == AlertState::kRaised && a.cause >= 0)
      ranks.insert(static_cast<uint32_t>(a.cause));
  SetField(&alert_ranks_, std::move(ranks));
}

void HilbertRingLayout::FocusBlock(std::optional<Block> block) {
  SetField(&zooms_, block ? std::vector<Block>{*block} : std::vector<Block>{});
}

void HilbertRingLayout::ZoomInto(Block block) {
  if (zoom() == block) return;
  zooms_.push_back(block);
  dirty_ = true;
}

bool HilbertRingLayout::BackOut() {
  if (zooms_.empty()) return false;
  zooms_.pop_back();
  dirty_ = true;
  return true;
}

absl::Status HilbertRingLayout::SetFilter(const RingFilter& filter) {
  // Checked against the job's names: a typo would otherwise empty the ring.
  for (ClusterLevel level : {ClusterLevel::kHost, ClusterLevel::kRack}) {
    const std::set<std::string>& wanted =
        level == ClusterLevel::kHost ? filter.hosts : filter.racks;
    std::set<std::string> known;
    for (const ClusterHierarchy::Unit& unit : hierarchy_->units(level)) known.insert(unit.name);
    for (const std::string& name : wanted) {
      if (known.count(name) != 0) continue;
      std::string names;
      for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
      return absl::NotFoundError(Cat("ring filter: no ", ClusterLevelName(level), " '", name,
                                     "' in this job (its ", ClusterLevelName(level), "s: ", names,
                                     ")"));
    }
  }
  if (filter.has_dimension() && coordinates_.empty()) {
    return absl::FailedPreconditionError(
        Cat("ring filter '", filter.ToString(),
            "': the devices have no coordinates to filter on (give --mesh-width)"));
  }
  SetField(&filter_, filter);
  return absl::OkStatus();
}

absl::Status HilbertRingLayout::SetFilterText(const std::string& text) {
  absl::StatusOr<RingFilter> filter = RingFilter::Parse(text);
  if (!filter.ok()) return filter.status();
  return SetFilter(*filter);
}

bool HilbertRingLayout::Shown(size_t device) {
  if (const auto block = zoom(); block && hierarchy_->UnitOf(block->first, device) != block->second)
    return false;
  if (filter_.empty()) return true;
  const auto& info = hierarchy_->traffic()->matrix().devices[device];
  const auto it = coordinates_.find(info.rank);
  return filter_.Accepts(info.host, hierarchy_->RackOf(info.host),
                         it == coordinates_.end() ? nullptr : &it->second);
}

const DrawList& HilbertRingLayout::Draw() {
  if (dirty_ || built_hierarchy_ != hierarchy_->version() ||
      built_traffic_ != hierarchy_->traffic()->version() || built_trends_ != trends_->version() ||
      built_selection_ != selection_->devices_version()) {
    Rebuild();
  }
  return list_;
}

std::optional<size_t> HilbertRingLayout::PositionOf(size_t device) {
  Draw();
  if (device >= position_.size() || position_[device] == SIZE_MAX) return std::nullopt;
  return position_[device];
}

PointF HilbertRingLayout::DevicePoint(size_t device) {
  const auto p = PositionOf(device);
  if (!p) return geometry_.centre();
  return geometry_.DevicePoint(*p);
}

void HilbertRingLayout::Rebuild() {
  dirty_ = false;
  built_hierarchy_ = hierarchy_->version();
  built_traffic_ = hierarchy_->traffic()->version();
  built_trends_ = trends_->version();
  built_selection_ = selection_->devices_version();
  list_.Clear();
  edges_.clear();
  bundles_.clear();
  const float w = static_cast<float>(width_), h = static_cast<float>(height_);
  list_.backgrounds.push_back({{0, 0, w, h}, kBackgroundColor});
  const size_t devices = PlaceDevices();
  const size_t n = ring_.size();
  back_button_ = {};
  if (const auto block = zoom()) {
    back_button_ = {8, 24, 330, 16};
    list_.rects.push_back({back_button_, Rgba(227, 242, 253), kSelectColor});
    list_.texts.push_back({12, 32,
                           Cat("\u2039 back out (Esc) of ", ClusterLevelName(block->first), " ",
                               hierarchy_->units(block->first)[block->second].name),
                           kSelectColor});
  }
  if (!filter_.empty()) {
    list_.texts.push_back(
        {w - 8, 64, Cat("filter: ", filter_.ToString()), kSelectColor, Text::Align::kRight});
  }
  if (n == 0) {
    list_.texts.push_back({w / 2, h / 2,
                           devices == 0 ? "no devices yet" : "no device passes the filter",
                           kTextColor, Text::Align::kCenter});
    return;
  }
  geometry_ = HilbertRingGeometry(w, h, n);
  DrawAddressTracks();
  DrawDeviceMarks();
  const size_t all_edges = DrawLinks();
  size_t bundled = 0;
  for (const Bundle& b : bundles_) bundled += b.flows;
  list_.texts.push_back(
      {8, 14,
       Cat("Hilbert ring: ", n, " devices in ",
           uses_coordinates_ ? "Hilbert order of their coordinates" : "rack, host, rank order",
           "; ", all_edges, " ", ClusterLevelName(level_), " links",
           bundled > 0 ? Cat(" (", bundled, " thin ones in ", bundles_.size(), " bundles by ",
                             ClusterLevelName(BundleLevel()), " pair)")
                       : "",
           ", bundled through hosts and racks; dark red = most transfer time"),
       kTextColor, Text::Align::kLeft, true});
}

size_t HilbertRingLayout::PlaceDevices() {
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  const std::vector<size_t>& order = hierarchy_->order();
  // A zoom into a unit the hierarchy no longer has (new racks, a new job)
  // is forgotten.
  std::erase_if(zooms_,
                [&](const Block& b) { return b.second >= hierarchy_->units(b.first).size(); });
  // Every device in Hilbert order of its coordinates when every one has
  // them, else in the hierarchy's order; then the zoom and the filter drop
  // devices from it, so the shown ones keep the whole ring's order (a
  // Hilbert curve over a subset's smaller grid can turn the other way).
  std::vector<HilbertOrder::Device> placed;
  placed.reserve(order.size());
  for (size_t d : order) {
    HilbertOrder::Device& device = placed.emplace_back();
    device.id = d;
    if (auto it = coordinates_.find(m.devices[d].rank); it != coordinates_.end())
      device.at = it->second;
  }
  const HilbertOrder::Result all = HilbertOrder::Sort(placed);
  uses_coordinates_ = all.uses_coordinates;
  ring_.clear();
  for (size_t d : all.order)
    if (Shown(d)) ring_.push_back(d);
  position_.assign(m.size(), SIZE_MAX);
  for (size_t i = 0; i < ring_.size(); ++i) position_[ring_[i]] = i;
  return all.order.size();
}

void HilbertRingLayout::DrawAddressTracks() {
  const PointF centre = geometry_.centre();
  const double step = geometry_.step();
  const size_t n = ring_.size();
  // Address tracks: runs of one host, then of one rack, alternately shaded.
  const auto [host_r0, host_r1] = geometry_.host_track();
  const auto [rack_r0, rack_r1] = geometry_.rack_track();
  for (int track = 0; track < 2; ++track) {
    const ClusterLevel level = track == 0 ? ClusterLevel::kHost : ClusterLevel::kRack;
    const auto& blocks = hierarchy_->units(level);
    size_t start = 0, runs = 0;
    for (size_t i = 1; i <= n; ++i) {
      const size_t block = hierarchy_->UnitOf(level, ring_[start]);
      if (i < n && hierarchy_->UnitOf(level, ring_[i]) == block) continue;
      // Shaded by run, not by unit: in Hilbert order the hosts beside each
      // other need not alternate in number.
      const Color shade = runs++ % 2 == 0 ? Rgba(176, 190, 197) : Rgba(120, 144, 156);
      const float r0 = track == 0 ? host_r0 : rack_r0, r1 = track == 0 ? host_r1 : rack_r1;
      list_.polygons.push_back({AnnularSector(centre, r0, r1, static_cast<double>(start) * step,
                                              static_cast<double>(i) * step),
                                track == 0 ? shade : Darker(shade, 0.8)});
      const double span = static_cast<double>(i - start) * step;
      if (span * r1 > 60 || (track == 1 && span * r1 > 30)) {
        const double mid = static_cast<double>(start + i) / 2 * step;
        const PointF t = OnCircle(centre, rack_r1 + (track == 0 ? 16 : 30), mid);
        list_.texts.push_back({t.x, t.y, blocks[block].name, kTextColor,
                               t.x < centre.x - 4   ? Text::Align::kRight
                               : t.x > centre.x + 4 ? Text::Align::kLeft
                                                    : Text::Align::kCenter,
                               track == 1, 7.5f});
      }
      start = i;
    }
  }
}

void HilbertRingLayout::DrawDeviceMarks() {
  constexpr float kMark = HilbertRingGeometry::kMark;
  constexpr float kTrackGap = HilbertRingGeometry::kTrackGap;
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  const PointF centre = geometry_.centre();
  const float radius = geometry_.radius();
  const double step = geometry_.step();
  const size_t n = ring_.size();
  const auto& totals = trends_->Totals();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t rank = m.devices[ring_[i]].rank;
    Color fill = Rgba(176, 190, 197);
    auto it = totals.find(rank);
    if (it != totals.end() && it->second.step_time_ns > 0)
      fill = EfficiencyColor(it->second.efficiency());
    if (alert_ranks_.count(rank)) fill = kAlertColor;
    const double a0 = static_cast<double>(i) * step, a1 = a0 + step * (n > 64 ? 1.0 : 0.85);
    list_.quads.push_back(RadialQuad(centre, radius, radius + kMark, a0, a1, fill));
    if (selection_->IsSelected(rank)) {
      list_.quads.push_back(
          RadialQuad(centre, radius + kMark, radius + kMark + kTrackGap, a0, a1, kSelectColor));
    }
    if (n <= 64) {
      const PointF t = geometry_.DevicePoint(i);
      list_.texts.push_back({t.x, t.y, Cat(rank), kTextColor, Text::Align::kCenter, false, 6.5f});
    }
  }
}

size_t HilbertRingLayout::DrawLinks() {
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  const PointF centre = geometry_.centre();
  const float radius = geometry_.radius();
  const size_t n = ring_.size();
  auto angle_of = [&](size_t pos) { return geometry_.AngleOf(pos); };
  // Each unit's circular mean angle of its shown devices.
  auto mean_angles = [&](ClusterLevel level) {
    const size_t count = hierarchy_->units(level).size();
    std::vector<double> sx(count, 0), sy(count, 0);
    for (size_t i = 0; i < n; ++i) {
      const size_t u = hierarchy_->UnitOf(level, ring_[i]);
      sx[u] += std::sin(angle_of(i));
      sy[u] += std::cos(angle_of(i));
    }
    std::vector<std::optional<double>> angles(count);  // nullopt: none shown
    for (size_t u = 0; u < count; ++u)
      if (sx[u] != 0 || sy[u] != 0) angles[u] = std::atan2(sx[u], sy[u]);
    return angles;
  };
  // Bundle points: each host's at 0.7 R and each rack's at 0.35 R, at the
  // circular mean angle of their shown devices.
  auto bundle_points = [&](ClusterLevel level, float fraction) {
    std::vector<PointF> points;
    for (const std::optional<double>& angle : mean_angles(level))
      points.push_back(angle ? OnCircle(centre, radius * fraction, *angle) : centre);
    return points;
  };
  const std::vector<PointF> host_points = bundle_points(ClusterLevel::kHost, 0.7f);
  const std::vector<PointF> rack_points = bundle_points(ClusterLevel::kRack, 0.35f);

  // Edges between units of the level (devices: the shown ones), from the
  // cells with traffic only (a 1,024-device ring: a thousand of a million).
  const std::vector<TrafficModel::Cell>& cells = hierarchy_->Aggregate(level_);
  const auto& units = hierarchy_->units(level_);
  const size_t k = units.size();
  std::vector<bool> shown(k, false);
  for (size_t d : ring_) shown[hierarchy_->UnitOf(level_, d)] = true;
  std::optional<std::pair<size_t, size_t>> selected;
  if (const auto link = selection_->selected_link()) {
    auto a = m.IndexOf(link->first), b = m.IndexOf(link->second);
    if (a && b)
      selected = std::minmax(hierarchy_->UnitOf(level_, *a), hierarchy_->UnitOf(level_, *b));
  }
  {
    std::map<std::pair<size_t, size_t>, size_t> edge_of;
    for (const auto& [x, y] : hierarchy_->Links(level_)) {
      if (x == y || !shown[x] || !shown[y]) continue;
      const size_t a = std::min(x, y), b = std::max(x, y);
      auto [it, added] = edge_of.emplace(std::make_pair(a, b), edges_.size());
      if (!added) continue;  // the other direction: counted below
      Edge e;
      e.a = a;
      e.b = b;
      e.weight = static_cast<double>(cells[a * k + b].duration_ns + cells[b * k + a].duration_ns);
      e.selected = selected.has_value() && *selected == std::make_pair(a, b);
      edges_.push_back(std::move(e));
    }
  }
  std::stable_sort(edges_.begin(), edges_.end(),
                   [](const Edge& x, const Edge& y) { return x.weight > y.weight; });
  const size_t all_edges = edges_.size();
  // Where a unit's edges leave the ring: its mean angle.
  std::vector<double> unit_angle;
  unit_angle.reserve(k);
  for (const std::optional<double>& angle : mean_angles(level_))
    unit_angle.push_back(angle.value_or(0));
  // Thin edges join their parents' bundle when there are too many to draw.
  const ClusterLevel up = BundleLevel();
  auto parent_of = [&](size_t u) {
    return level_ == ClusterLevel::kRack ? u : hierarchy_->UnitOf(up, units[u].devices.front());
  };
  std::vector<RingEdgeBundler::Edge> to_split;
  to_split.reserve(edges_.size());
  for (const Edge& e : edges_) {
    to_split.push_back(
        {parent_of(e.a), parent_of(e.b), unit_angle[e.a], unit_angle[e.b], e.weight, e.selected});
  }
  const RingEdgeBundler::Result split = RingEdgeBundler::Split(
      to_split,
      {.max_edges = kMaxEdges, .bundle_above = kBundleAbove, .thin_edge_px = kThinEdgePx});
  std::vector<Edge> alone;
  alone.reserve(split.alone.size());
  for (size_t i : split.alone) alone.push_back(std::move(edges_[i]));
  edges_ = std::move(alone);
  auto anchor = [&](double angle) { return geometry_.Anchor(angle); };
  // Up the hierarchy from one end and down to the other: a device's own
  // host point, its rack's point only when the racks differ (or for host
  // edges), then the other side's.
  const bool devices = level_ == ClusterLevel::kDevice;
  auto route = [&](PointF from, PointF to, size_t da, size_t db) {
    const size_t ha = hierarchy_->UnitOf(ClusterLevel::kHost, da);
    const size_t hb = hierarchy_->UnitOf(ClusterLevel::kHost, db);
    const size_t ra = hierarchy_->UnitOf(ClusterLevel::kRack, da);
    const size_t rb = hierarchy_->UnitOf(ClusterLevel::kRack, db);
    std::vector<PointF> controls = {from};
    if (devices) controls.push_back(host_points[ha]);
    if (ra != rb && level_ != ClusterLevel::kRack) controls.push_back(rack_points[ra]);
    if (ra != rb && level_ != ClusterLevel::kRack) controls.push_back(rack_points[rb]);
    if (devices && ha != hb) controls.push_back(host_points[hb]);
    controls.push_back(to);
    if (controls.size() == 2) controls.insert(controls.begin() + 1, centre);
    return BSpline(controls, 6);
  };
  for (Edge& e : edges_) {
    e.path = route(anchor(unit_angle[e.a]), anchor(unit_angle[e.b]), units[e.a].devices.front(),
                   units[e.b].devices.front());
    e.width = split.WidthOf(e.weight);
  }
  const auto& parents = hierarchy_->units(up);
  for (const RingEdgeBundler::Bundle& split_bundle : split.bundles) {
    Bundle& b = bundles_.emplace_back();
    b.a = split_bundle.a;
    b.b = split_bundle.b;
    b.flows = split_bundle.flows;
    b.weight = split_bundle.weight;
    b.path = route(anchor(split_bundle.angle_a), anchor(split_bundle.angle_b),
                   parents[b.a].devices.front(), parents[b.b].devices.front());
    b.width = split.WidthOf(b.weight / static_cast<double>(b.flows));
  }
  const double max_weight = split.max_weight;
  auto edge_color = [&](double weight) {
    const double f = weight / max_weight;
    return Mix(kBackgroundColor, Mix(Rgba(120, 144, 156), Rgba(127, 0, 0), f),
               (50 + 205 * f) / 255);
  };
  for (const Bundle& b : bundles_)
    list_.polylines.push_back(
        {b.path, edge_color(b.weight / static_cast<double>(b.flows)), b.width});
  // Smoothed: hairlines (cheap), the kSmoothEdges heaviest and the
  // selected one; the other wide ones are rough (128 hosts in a ring: 128
  // edges 8 pixels wide, 15 ms of a frame smoothed).
  for (auto it = edges_.rbegin(); it != edges_.rend(); ++it) {
    const bool smooth =
        it->width <= 1 || it->selected || static_cast<size_t>(&*it - edges_.data()) < kSmoothEdges;
    if (it->selected) list_.polylines.push_back({it->path, kSelectColor, it->width + 6});
    list_.polylines.push_back({it->path, edge_color(it->weight), it->width, false, smooth});
  }
  return all_edges;
}

std::optional<size_t> HilbertRingLayout::DeviceAt(float x, float y) {
  Draw();
  if (ring_.empty() || geometry_.WhereIs(x, y) != HilbertRingGeometry::Where::kMarks)
    return std::nullopt;
  return ring_[geometry_.PositionAt(x, y)];
}

std::string HilbertRingLayout::TooltipAt(float x, float y) {
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  if (const auto block = BlockAt(x, y)) {
    const auto& unit = hierarchy_->units(block->first)[block->second];
    return Cat(ClusterLevelName(block->first), " ", unit.name, ": ", unit.devices.size(),
               " devices; click to zoom into it (Esc backs out)");
  }
  if (const auto d = DeviceAt(x, y)) {
    const auto& device = m.devices[*d];
    std::string text = Cat("rank ", device.rank, " on ", device.host, ", ",
                           hierarchy_->RackOf(device.host), ", ring position ", position_[*d]);
    if (auto it = coordinates_.find(device.rank); it != coordinates_.end())
      text += Cat(", at (", it->second.first, ", ", it->second.second, ")");
    const auto& totals = trends_->Totals();
    if (auto it = totals.find(device.rank); it != totals.end()) {
      text +=
          Cat("\nper step: compute ", FormatDuration(it->second.compute_ns), " of ",
              FormatDuration(it->second.step_time_ns), ", sent ", FormatBytes(it->second.bytes_out),
              ", received ", FormatBytes(it->second.bytes_in));
    }
    return text;
  }
  const auto& units = hierarchy_->units(level_);
  for (const Edge& e : edges_) {
    if (DistanceToPolyline(e.path, {x, y}) <= std::max(3.0f, e.width / 2 + 1)) {
      return Cat(units[e.a].name, " <-> ", units[e.b].name, ": ", FormatDuration(e.weight),
                 " transfer time");
    }
  }
  if (const auto b = BundleAt(x, y)) {
    const Bundle& bundle = bundles_[*b];
    const auto& parents = hierarchy_->units(BundleLevel());
    return Cat(parents[bundle.a].name, " <-> ", parents[bundle.b].name, ": ", bundle.flows, " ",
               ClusterLevelName(level_), " links under ", kThinEdgePx, " px drawn as one, ",
               FormatDuration(bundle.weight), " transfer time in all");
  }
  return "";
}

std::optional<HilbertRingLayout::Block> HilbertRingLayout::BlockAt(float x, float y) {
  Draw();
  if (ring_.empty()) return std::nullopt;
  ClusterLevel level;
  switch (geometry_.WhereIs(x, y)) {
    case HilbertRingGeometry::Where::kHostTrack:
      level = ClusterLevel::kHost;
      break;
    case HilbertRingGeometry::Where::kRackTrack:
      level = ClusterLevel::kRack;
      break;
    default:
      return std::nullopt;
  }
  return Block{level, hierarchy_->UnitOf(level, ring_[geometry_.PositionAt(x, y)])};
}

bool HilbertRingLayout::ClickAt(float x, float y) {
  const uint64_t before = selection_->devices_version();
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  Draw();
  if (back_button_.Contains(x, y)) {
    BackOut();
    return false;
  }
  if (const auto block = BlockAt(x, y)) {
    ZoomInto(*block);
    return false;
  }
  if (const auto d = DeviceAt(x, y)) {
    selection_->SelectDevices({m.devices[*d].rank});
    return selection_->devices_version() != before;
  }
  const auto& units = hierarchy_->units(level_);
  for (const Edge& e : edges_) {
    if (DistanceToPolyline(e.path, {x, y}) > std::max(3.0f, e.width / 2 + 1)) continue;
    if (level_ == ClusterLevel::kDevice) {
      const size_t a = units[e.a].devices[0], b = units[e.b].devices[0];
      const bool forward = m.at(a, b).duration_ns >= m.at(b, a).duration_ns;
      selection_->SelectLink(m.devices[forward ? a : b].rank, m.devices[forward ? b : a].rank);
    } else {
      std::vector<uint32_t> ranks;
      for (size_t u : {e.a, e.b})
        for (size_t d : units[u].devices) ranks.push_back(m.devices[d].rank);
      selection_->SelectDevices(ranks);
    }
    return selection_->devices_version() != before;
  }
  if (const auto b = BundleAt(x, y)) {
    std::vector<uint32_t> ranks;
    const auto& parents = hierarchy_->units(BundleLevel());
    for (size_t p : {bundles_[*b].a, bundles_[*b].b})
      for (size_t d : parents[p].devices) ranks.push_back(m.devices[d].rank);
    selection_->SelectDevices(ranks);
    return selection_->devices_version() != before;
  }
  selection_->ClearDevices();
  return selection_->devices_version() != before;
}

ClusterLevel HilbertRingLayout::BundleLevel() const {
  return level_ == ClusterLevel::kRack ? level_
                                       : static_cast<ClusterLevel>(static_cast<int>(level_) + 1);
}

std::optional<size_t> HilbertRingLayout::BundleAt(float x, float y) {
  Draw();
  for (size_t i = bundles_.size(); i-- > 0;) {  // the topmost first
    if (DistanceToPolyline(bundles_[i].path, {x, y}) <= std::max(3.0f, bundles_[i].width / 2 + 1))
      return i;
  }
  return std::nullopt;
}

bool HilbertRingLayout::LassoSelect(const std::vector<PointF>& polygon) {
  Draw();
  if (polygon.size() < 3) return false;
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  std::vector<uint32_t> ranks;
  for (size_t d : ring_) {
    const PointF p = DevicePoint(d);
    if (Inside(polygon, p.x, p.y)) ranks.push_back(m.devices[d].rank);
  }
  if (ranks.empty()) return false;
  selection_->SelectDevices(ranks);
  return true;
}

}  // namespace trainscope::viewer
