#include "trainscope/viewer/hilbert_ring_layout.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "trainscope/viewer/cluster_geometry.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

constexpr float kTop = 40;
constexpr float kMark = 16;   // device marks' radial length
constexpr float kTrack = 12;  // each address track
constexpr float kTrackGap = 3;

Color Mix(Color a, Color b, double t) {
  auto ch = [&](int shift) {
    const double x = static_cast<double>((a >> shift) & 0xFF);
    const double y = static_cast<double>((b >> shift) & 0xFF);
    return static_cast<uint32_t>(x + (y - x) * t);
  };
  return Rgba(ch(16), ch(8), ch(0));
}

Quad RadialQuad(PointF c, float r0, float r1, double a0, double a1, Color fill) {
  Quad q;
  q.p[0] = OnCircle(c, r1, a0);
  q.p[1] = OnCircle(c, r1, a1);
  q.p[2] = OnCircle(c, r0, a1);
  q.p[3] = OnCircle(c, r0, a0);
  q.fill = fill;
  q.smooth = false;
  return q;
}

}  // namespace

uint64_t HilbertIndex(uint32_t bits, uint32_t x, uint32_t y) {
  // The classic xy -> d conversion: at each scale, which quadrant, then
  // rotate/flip the rest so the sub-curve is in standard orientation.
  const uint64_t n = uint64_t{1} << bits;
  uint64_t d = 0;
  uint64_t px = x, py = y;
  for (uint64_t s = n / 2; s > 0; s /= 2) {
    const uint64_t rx = (px & s) > 0 ? 1 : 0;
    const uint64_t ry = (py & s) > 0 ? 1 : 0;
    d += s * s * ((3 * rx) ^ ry);
    if (ry == 0) {
      if (rx == 1) {
        px = n - 1 - px;
        py = n - 1 - py;
      }
      std::swap(px, py);
    }
  }
  return d;
}

HilbertRingLayout::HilbertRingLayout(ClusterHierarchy* hierarchy, UnitTrendModel* trends,
                                     SelectionState* selection)
    : hierarchy_(hierarchy), trends_(trends), selection_(selection) {}

void HilbertRingLayout::SetViewport(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = width;
  height_ = height;
  dirty_ = true;
}

void HilbertRingLayout::SetLevel(ClusterLevel level) {
  if (level == level_) return;
  level_ = level;
  dirty_ = true;
}

void HilbertRingLayout::SetCoordinates(
    const std::map<uint32_t, std::pair<uint32_t, uint32_t>>& coordinates) {
  coordinates_ = coordinates;
  dirty_ = true;
}

void HilbertRingLayout::SetAlerts(const std::vector<Alert>& alerts) {
  std::set<uint32_t> ranks;
  for (const Alert& a : alerts)
    if (a.state == AlertState::kRaised && a.cause >= 0)
      ranks.insert(static_cast<uint32_t>(a.cause));
  if (ranks == alert_ranks_) return;
  alert_ranks_ = std::move(ranks);
  dirty_ = true;
}

void HilbertRingLayout::FocusBlock(std::optional<std::pair<ClusterLevel, size_t>> block) {
  if (block == focus_) return;
  focus_ = block;
  dirty_ = true;
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
  if (!p) return centre_;
  const double step = 2 * kPi / static_cast<double>(ring_.size());
  return OnCircle(centre_, radius_ + kMark / 2, (static_cast<double>(*p) + 0.5) * step);
}

void HilbertRingLayout::Rebuild() {
  dirty_ = false;
  built_hierarchy_ = hierarchy_->version();
  built_traffic_ = hierarchy_->traffic()->version();
  built_trends_ = trends_->version();
  built_selection_ = selection_->devices_version();
  list_.Clear();
  edges_.clear();
  const float w = static_cast<float>(width_), h = static_cast<float>(height_);
  list_.backgrounds.push_back({{0, 0, w, h}, kBackgroundColor});
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  const std::vector<size_t>& order = hierarchy_->order();
  // The devices shown, in Hilbert order of their coordinates when every
  // one has them, else in the hierarchy's order.
  ring_.clear();
  for (size_t d : order) {
    if (focus_.has_value() && hierarchy_->UnitOf(focus_->first, d) != focus_->second) continue;
    ring_.push_back(d);
  }
  uses_coordinates_ = !ring_.empty() && std::all_of(ring_.begin(), ring_.end(), [&](size_t d) {
    return coordinates_.count(m.devices[d].rank) != 0;
  });
  if (uses_coordinates_) {
    uint32_t extent = 1;
    for (size_t d : ring_) {
      const auto& [x, y] = coordinates_.at(m.devices[d].rank);
      extent = std::max({extent, x + 1, y + 1});
    }
    uint32_t bits = 0;
    while ((uint64_t{1} << bits) < extent) ++bits;
    std::stable_sort(ring_.begin(), ring_.end(), [&](size_t a, size_t b) {
      const auto& pa = coordinates_.at(m.devices[a].rank);
      const auto& pb = coordinates_.at(m.devices[b].rank);
      return HilbertIndex(bits, pa.first, pa.second) < HilbertIndex(bits, pb.first, pb.second);
    });
  }
  position_.assign(m.size(), SIZE_MAX);
  for (size_t i = 0; i < ring_.size(); ++i) position_[ring_[i]] = i;
  const size_t n = ring_.size();
  if (n == 0) {
    list_.texts.push_back({w / 2, h / 2, "no devices yet", kTextColor, Text::Align::kCenter});
    return;
  }
  centre_ = {w / 2, kTop + (h - kTop) / 2};
  radius_ = std::max(30.0f, std::min(w, h - kTop) / 2 - kMark - 2 * (kTrack + kTrackGap) - 60);
  const double step = 2 * kPi / static_cast<double>(n);
  auto angle_of = [&](size_t pos) { return (static_cast<double>(pos) + 0.5) * step; };

  // Address tracks: runs of one host, then of one rack, alternately shaded.
  const float host_r0 = radius_ + kMark + kTrackGap, host_r1 = host_r0 + kTrack;
  const float rack_r0 = host_r1 + kTrackGap, rack_r1 = rack_r0 + kTrack;
  for (int track = 0; track < 2; ++track) {
    const ClusterLevel level = track == 0 ? ClusterLevel::kHost : ClusterLevel::kRack;
    const auto& blocks = hierarchy_->units(level);
    size_t start = 0;
    for (size_t i = 1; i <= n; ++i) {
      const size_t block = hierarchy_->UnitOf(level, ring_[start]);
      if (i < n && hierarchy_->UnitOf(level, ring_[i]) == block) continue;
      const Color shade = block % 2 == 0 ? Rgba(176, 190, 197) : Rgba(120, 144, 156);
      const float r0 = track == 0 ? host_r0 : rack_r0, r1 = track == 0 ? host_r1 : rack_r1;
      list_.polygons.push_back({AnnularSector(centre_, r0, r1, static_cast<double>(start) * step,
                                              static_cast<double>(i) * step),
                                track == 0 ? shade : Darker(shade, 0.8)});
      const double span = static_cast<double>(i - start) * step;
      if (span * r1 > 60 || (track == 1 && span * r1 > 30)) {
        const double mid = static_cast<double>(start + i) / 2 * step;
        const PointF t = OnCircle(centre_, rack_r1 + (track == 0 ? 16 : 30), mid);
        list_.texts.push_back({t.x, t.y, blocks[block].name, kTextColor,
                               t.x < centre_.x - 4   ? Text::Align::kRight
                               : t.x > centre_.x + 4 ? Text::Align::kLeft
                                                     : Text::Align::kCenter,
                               track == 1, 7.5f});
      }
      start = i;
    }
  }

  // Device marks: efficiency colour, alert red, selected blue.
  const auto& totals = trends_->Totals();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t rank = m.devices[ring_[i]].rank;
    Color fill = Rgba(176, 190, 197);
    auto it = totals.find(rank);
    if (it != totals.end() && it->second.step_time_ns > 0)
      fill = EfficiencyColor(it->second.efficiency());
    if (alert_ranks_.count(rank)) fill = kAlertColor;
    const double a0 = static_cast<double>(i) * step, a1 = a0 + step * (n > 64 ? 1.0 : 0.85);
    list_.quads.push_back(RadialQuad(centre_, radius_, radius_ + kMark, a0, a1, fill));
    if (selection_->IsSelected(rank)) {
      list_.quads.push_back(
          RadialQuad(centre_, radius_ + kMark, radius_ + kMark + kTrackGap, a0, a1, kSelectColor));
    }
    if (n <= 64) {
      const PointF t = OnCircle(centre_, radius_ + kMark / 2, angle_of(i));
      list_.texts.push_back({t.x, t.y, Cat(rank), kTextColor, Text::Align::kCenter, false, 6.5f});
    }
  }

  // Bundle points: each host's at 0.7 R and each rack's at 0.35 R, at the
  // circular mean angle of their shown devices.
  auto bundle_points = [&](ClusterLevel level, float fraction) {
    const size_t count = hierarchy_->units(level).size();
    std::vector<double> sx(count, 0), sy(count, 0);
    for (size_t i = 0; i < n; ++i) {
      const size_t u = hierarchy_->UnitOf(level, ring_[i]);
      sx[u] += std::sin(angle_of(i));
      sy[u] += std::cos(angle_of(i));
    }
    std::vector<PointF> points(count, centre_);
    for (size_t u = 0; u < count; ++u) {
      if (sx[u] == 0 && sy[u] == 0) continue;
      points[u] = OnCircle(centre_, radius_ * fraction, std::atan2(sx[u], sy[u]));
    }
    return points;
  };
  const std::vector<PointF> host_points = bundle_points(ClusterLevel::kHost, 0.7f);
  const std::vector<PointF> rack_points = bundle_points(ClusterLevel::kRack, 0.35f);

  // Edges between units of the level (devices: the shown ones).
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
  for (size_t a = 0; a < k; ++a) {
    if (!shown[a]) continue;
    for (size_t b = a + 1; b < k; ++b) {
      if (!shown[b]) continue;
      const double weight =
          static_cast<double>(cells[a * k + b].duration_ns + cells[b * k + a].duration_ns);
      if (cells[a * k + b].steps == 0 && cells[b * k + a].steps == 0) continue;
      Edge e;
      e.a = a;
      e.b = b;
      e.weight = weight;
      e.selected = selected.has_value() && *selected == std::make_pair(a, b);
      edges_.push_back(std::move(e));
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
  // Where a unit's edges leave the ring: its device, or its block's middle.
  auto anchor = [&](size_t u) {
    double sx = 0, sy = 0;
    for (size_t d : units[u].devices) {
      if (position_[d] == SIZE_MAX) continue;
      sx += std::sin(angle_of(position_[d]));
      sy += std::cos(angle_of(position_[d]));
    }
    return OnCircle(centre_, radius_ - 2, std::atan2(sx, sy));
  };
  const double max_weight = edges_.empty() ? 1 : std::max(1e-9, edges_.front().weight);
  for (Edge& e : edges_) {
    const size_t da = units[e.a].devices.front(), db = units[e.b].devices.front();
    const size_t ha = hierarchy_->UnitOf(ClusterLevel::kHost, da);
    const size_t hb = hierarchy_->UnitOf(ClusterLevel::kHost, db);
    const size_t ra = hierarchy_->UnitOf(ClusterLevel::kRack, da);
    const size_t rb = hierarchy_->UnitOf(ClusterLevel::kRack, db);
    // Up the hierarchy from one end and down to the other: a device's own
    // host point, its rack's point only when the racks differ (or for host
    // edges), then the other side's.
    std::vector<PointF> controls = {anchor(e.a)};
    const bool devices = level_ == ClusterLevel::kDevice;
    if (devices) controls.push_back(host_points[ha]);
    if (ra != rb && level_ != ClusterLevel::kRack) controls.push_back(rack_points[ra]);
    if (ra != rb && level_ != ClusterLevel::kRack) controls.push_back(rack_points[rb]);
    if (devices && ha != hb) controls.push_back(host_points[hb]);
    controls.push_back(anchor(e.b));
    if (controls.size() == 2) controls.insert(controls.begin() + 1, centre_);
    e.path = BSpline(controls, 6);
    e.width = static_cast<float>(1 + 7 * e.weight / max_weight);
  }
  for (auto it = edges_.rbegin(); it != edges_.rend(); ++it) {
    const double f = it->weight / max_weight;
    if (it->selected)
      list_.polylines.push_back({it->path, WithAlpha(kSelectColor, 210), it->width + 6});
    list_.polylines.push_back({it->path,
                               WithAlpha(Mix(Rgba(120, 144, 156), Rgba(127, 0, 0), f),
                                         static_cast<uint32_t>(50 + 205 * f)),
                               it->width});
  }
  list_.texts.push_back(
      {8, 14,
       Cat("Hilbert ring: ", n, " devices in ",
           uses_coordinates_ ? "Hilbert order of their coordinates" : "rack, host, rank order",
           "; ", all_edges, " ", ClusterLevelName(level_), " links",
           all_edges > edges_.size() ? Cat(" (", edges_.size(), " heaviest drawn)") : "",
           ", bundled through hosts and racks; dark red = most transfer time"),
       kTextColor, Text::Align::kLeft, true});
  if (focus_.has_value()) {
    list_.texts.push_back({8, 30,
                           Cat("zoomed into ", ClusterLevelName(focus_->first), " ",
                               hierarchy_->units(focus_->first)[focus_->second].name),
                           kSelectColor});
  }
}

std::optional<size_t> HilbertRingLayout::DeviceAt(float x, float y) {
  Draw();
  if (ring_.empty()) return std::nullopt;
  const float d = std::hypot(x - centre_.x, y - centre_.y);
  if (d < radius_ - 2 || d > radius_ + kMark + 2) return std::nullopt;
  double a = std::atan2(x - centre_.x, -(y - centre_.y));
  if (a < 0) a += 2 * kPi;
  const size_t pos = std::min(
      ring_.size() - 1, static_cast<size_t>(a / (2 * kPi) * static_cast<double>(ring_.size())));
  return ring_[pos];
}

std::string HilbertRingLayout::TooltipAt(float x, float y) {
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
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
  return "";
}

bool HilbertRingLayout::ClickAt(float x, float y) {
  const uint64_t before = selection_->devices_version();
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
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
  selection_->ClearDevices();
  return selection_->devices_version() != before;
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
