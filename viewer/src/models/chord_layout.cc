#include "trainscope/viewer/chord_layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

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
constexpr float kRingWidth = 12;  // each ancestor ring
constexpr float kBaseThickness = 10;
constexpr float kSelfThickness = 22;
constexpr double kNarrowArcPx = 8;  // narrower arcs are quads

// The sector from a0 to a1 along the inner radius, then a curve through
// the centre to the other end's sector and back.
std::vector<PointF> RibbonPolygon(PointF c, float r, double s0, double s1, double d0, double d1) {
  std::vector<PointF> out;
  auto arc = [&](double a0, double a1) {
    const int n = std::clamp(static_cast<int>(std::abs(a1 - a0) / (kPi / 90)) + 1, 1, 60);
    for (int i = 0; i <= n; ++i) out.push_back(OnCircle(c, r, a0 + (a1 - a0) * i / n));
  };
  auto curve = [&](double from, double to) {
    const std::vector<PointF> q = Quadratic(OnCircle(c, r, from), c, OnCircle(c, r, to), 20);
    out.insert(out.end(), q.begin() + 1, q.end() - 1);
  };
  arc(s0, s1);
  curve(s1, d0);
  arc(d0, d1);
  curve(d1, s0);
  return out;
}

// The level whose units bundle thin ribbons: one up (racks: themselves).
ClusterLevel BundleLevel(ClusterLevel level) {
  return level == ClusterLevel::kRack ? level
                                      : static_cast<ClusterLevel>(static_cast<int>(level) + 1);
}

// A bundle whose ends share a parent: its span along the inner radius and
// a loop back through the inside, instead of a ribbon folded onto itself.
std::vector<PointF> PetalPolygon(PointF c, float r, double a0, double a1) {
  std::vector<PointF> out;
  const int n = std::clamp(static_cast<int>(std::abs(a1 - a0) / (kPi / 90)) + 1, 1, 60);
  for (int i = 0; i <= n; ++i) out.push_back(OnCircle(c, r, a0 + (a1 - a0) * i / n));
  const std::vector<PointF> q = Quadratic(OnCircle(c, r, a1), c, OnCircle(c, r, a0), 20);
  out.insert(out.end(), q.begin() + 1, q.end() - 1);
  return out;
}

}  // namespace

ChordLayout::ChordLayout(ClusterHierarchy* hierarchy, SelectionState* selection)
    : hierarchy_(hierarchy), selection_(selection) {}

void ChordLayout::SetViewport(int width, int height) {
  SetField(&width_, width);
  SetField(&height_, height);
}

void ChordLayout::SetLevel(ClusterLevel level) { SetField(&level_, level); }

void ChordLayout::SetMeasure(Measure measure) { SetField(&measure_, measure); }

const DrawList& ChordLayout::Draw() {
  if (dirty_ || built_hierarchy_ != hierarchy_->version() ||
      built_traffic_ != hierarchy_->traffic()->version() ||
      built_selection_ != selection_->devices_version()) {
    Rebuild();
  }
  return list_;
}

void ChordLayout::Rebuild() {
  dirty_ = false;
  built_hierarchy_ = hierarchy_->version();
  built_traffic_ = hierarchy_->traffic()->version();
  built_selection_ = selection_->devices_version();
  list_.Clear();
  arcs_.clear();
  ribbons_.clear();
  bundles_.clear();
  scale_ = 0;
  const float w = static_cast<float>(width_), h = static_cast<float>(height_);
  list_.backgrounds.push_back({{0, 0, w, h}, kBackgroundColor});
  const std::vector<ClusterHierarchy::Unit>& units = hierarchy_->units(level_);
  const size_t k = units.size();
  const int rings = level_ == ClusterLevel::kDevice ? 2 : level_ == ClusterLevel::kHost ? 1 : 0;
  centre_ = {w / 2, kTop + (h - kTop) / 2};
  radius_ = std::max(20.0f, std::min(w, h - kTop) / 2 - 40 - kBaseThickness - kSelfThickness -
                                rings * (kRingWidth + 4));
  const std::vector<TrafficModel::Cell>& cells = hierarchy_->Aggregate(level_);
  // Only the cells with traffic: a 1,024-device ring has a thousand among a
  // million, and walking all of them (a column at a time for the received
  // side) was most of a frame.
  const std::vector<std::pair<uint32_t, uint32_t>>& links = hierarchy_->Links(level_);
  auto value_of = [&](const TrafficModel::Cell& c) {
    return measure_ == Measure::kBytes ? static_cast<double>(c.bytes)
                                       : static_cast<double>(c.duration_ns);
  };
  arcs_.resize(k);
  double total = 0, max_self = 0;
  for (size_t u = 0; u < k; ++u) arcs_[u].unit = u;
  for (const auto& [u, v] : links) {
    const double value = value_of(cells[u * k + v]);
    if (u == v) {
      arcs_[u].self = value;
      max_self = std::max(max_self, value);
      continue;
    }
    arcs_[u].out += value;
    arcs_[v].in += value;
    total += 2 * value;
  }
  if (k == 0 || total <= 0) {
    list_.texts.push_back({w / 2, h / 2,
                           k == 0 ? "no devices yet"
                                  : Cat("no traffic between ", ClusterLevelName(level_),
                                        "s (only inside them): choose a finer level"),
                           kTextColor, Text::Align::kCenter});
    return;
  }
  // Gaps: a small one between units, a larger one where the parent changes.
  // Each kind of gap takes at most a fixed share of the circle however many
  // there are (1,024 devices on 128 hosts: 128 parent changes), so the arcs
  // always keep most of it.
  auto parent_of = [&](size_t u) { return level_ == ClusterLevel::kRack ? 0 : units[u].parent; };
  size_t parent_changes = 0;
  for (size_t u = 0; u < k; ++u) parent_changes += k > 1 && parent_of((u + 1) % k) != parent_of(u);
  const double small_gap = std::min(0.01, 2 * kPi * 0.15 / static_cast<double>(k));
  const double big_gap =
      std::min(0.05, 2 * kPi * 0.1 / std::max<double>(1, static_cast<double>(parent_changes)));
  const double gaps = static_cast<double>(parent_changes) * big_gap +
                      static_cast<double>(k - parent_changes) * small_gap;
  scale_ = (2 * kPi - gaps) / total;
  double angle = 0;
  for (size_t u = 0; u < k; ++u) {
    Arc& a = arcs_[u];
    a.out_start = angle;
    a.out_end = a.in_start = angle + a.out * scale_;
    a.in_end = a.in_start + a.in * scale_;
    a.thickness = kBaseThickness +
                  (max_self > 0 ? kSelfThickness * static_cast<float>(a.self / max_self) : 0);
    angle = a.in_end + ((k > 1 && parent_of((u + 1) % k) != parent_of(u)) ? big_gap : small_gap);
  }

  // Ribbons: the source's out interval in its destinations' order, the
  // destination's in interval in its sources' order (the links are by
  // source, then destination, so one pass fills both).
  std::vector<double> out_cursor(k), in_cursor(k);
  for (size_t u = 0; u < k; ++u)
    out_cursor[u] = arcs_[u].out_start, in_cursor[u] = arcs_[u].in_start;
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  std::optional<std::pair<size_t, size_t>> selected;
  if (const auto link = selection_->selected_link()) {
    auto a = m.IndexOf(link->first), b = m.IndexOf(link->second);
    if (a && b) selected = {hierarchy_->UnitOf(level_, *a), hierarchy_->UnitOf(level_, *b)};
  }
  ribbons_.reserve(links.size());
  for (const auto& [u, v] : links) {
    if (u == v) continue;
    const double value = value_of(cells[u * k + v]);
    if (value <= 0) continue;
    Ribbon r;
    r.src = u;
    r.dst = v;
    r.value = value;
    r.src_start = out_cursor[u];
    r.src_end = out_cursor[u] += value * scale_;
    r.dst_start = in_cursor[v];
    r.dst_end = in_cursor[v] += value * scale_;
    ribbons_.push_back(std::move(r));
  }
  std::stable_sort(ribbons_.begin(), ribbons_.end(),
                   [](const Ribbon& a, const Ribbon& b) { return a.value > b.value; });
  const size_t all_ribbons = ribbons_.size();
  // Alone: the heaviest, the selected one, and the rest wide enough to see
  // apart (up to kMaxRibbons); the others join their parents' bundle.
  std::map<std::pair<size_t, size_t>, size_t> bundle_of;
  std::vector<size_t> bundle_src;  // per bundle: its heaviest member's source
  for (size_t i = 0; i < ribbons_.size(); ++i) {
    Ribbon& r = ribbons_[i];
    r.selected = selected.has_value() && selected->first == r.src && selected->second == r.dst;
    const double widest = std::max(r.src_end - r.src_start, r.dst_end - r.dst_start) * radius_;
    if (i == 0 || r.selected || (i < kMaxRibbons && widest >= kMinRibbonPx)) {
      r.polygon = RibbonPolygon(centre_, radius_, r.src_start, r.src_end, r.dst_start, r.dst_end);
      continue;
    }
    const std::pair<size_t, size_t> key{BundleParent(r.src), BundleParent(r.dst)};
    auto [it, added] = bundle_of.emplace(key, bundles_.size());
    if (added) {
      bundle_src.push_back(r.src);
      Bundle b;
      b.src_parent = key.first;
      b.dst_parent = key.second;
      b.src_start = r.src_start, b.src_end = r.src_end;
      b.dst_start = r.dst_start, b.dst_end = r.dst_end;
      bundles_.push_back(std::move(b));
    }
    Bundle& b = bundles_[it->second];
    r.bundle = it->second;
    b.flows += 1;
    b.value += r.value;
    b.src_start = std::min(b.src_start, r.src_start), b.src_end = std::max(b.src_end, r.src_end);
    b.dst_start = std::min(b.dst_start, r.dst_start), b.dst_end = std::max(b.dst_end, r.dst_end);
  }
  for (Bundle& b : bundles_) {
    b.polygon =
        b.src_parent == b.dst_parent
            ? PetalPolygon(centre_, radius_, std::min(b.src_start, b.dst_start),
                           std::max(b.src_end, b.dst_end))
            : RibbonPolygon(centre_, radius_, b.src_start, b.src_end, b.dst_start, b.dst_end);
  }
  const double max_value = ribbons_.empty() ? 1 : ribbons_.front().value;
  auto ribbon_color = [&](size_t src, double value) {
    const Color base = CategoryColor(level_ == ClusterLevel::kDevice ? units[src].parent : src);
    return Mix(kBackgroundColor, base, (90 + 120 * std::min(1.0, value / max_value)) / 255);
  };
  // Bundles under the ribbons, lightest first.
  std::vector<size_t> bundle_order(bundles_.size());
  for (size_t i = 0; i < bundle_order.size(); ++i) bundle_order[i] = i;
  std::stable_sort(bundle_order.begin(), bundle_order.end(),
                   [&](size_t a, size_t b) { return bundles_[a].value < bundles_[b].value; });
  for (size_t i : bundle_order) {
    const Bundle& b = bundles_[i];
    // Coloured as its members (by their source), as light as an average one.
    // Not smoothed: a large fill antialiased costs several times as much,
    // and the ribbons drawn alone above it keep smooth edges.
    list_.polygons.push_back({b.polygon,
                              ribbon_color(bundle_src[i], b.value / static_cast<double>(b.flows)),
                              0, 1, false});
  }
  // Lightest first: the heaviest ribbon on top, outlined dark.
  for (auto it = ribbons_.rbegin(); it != ribbons_.rend(); ++it) {
    if (it->polygon.empty()) continue;
    const bool heaviest = &*it == &ribbons_.front();
    list_.polygons.push_back({it->polygon, ribbon_color(it->src, it->value),
                              it->selected ? kSelectColor
                              : heaviest   ? Rgba(127, 0, 0)
                                           : 0,
                              it->selected ? 3.0f : 2.0f});
  }

  // Arcs: out (source colour), then in (darker); selected units outlined.
  // An arc a few pixels wide is a plain quad (1,024 devices: 2,048 of them).
  for (size_t u = 0; u < k; ++u) {
    const Arc& a = arcs_[u];
    const Color base = CategoryColor(level_ == ClusterLevel::kDevice ? units[u].parent : u);
    bool chosen = false;
    for (size_t d : units[u].devices) chosen = chosen || selection_->IsSelected(m.devices[d].rank);
    const float r0 = radius_ + 2, r1 = radius_ + 2 + a.thickness;
    const bool narrow = (a.in_end - a.out_start) * r1 < kNarrowArcPx;
    auto sector = [&](double a0, double a1, Color fill) {
      if (a1 <= a0) return;
      if (narrow) {
        list_.quads.push_back(RadialQuad(centre_, r0, r1, a0, a1, fill));
      } else {
        list_.polygons.push_back({AnnularSector(centre_, r0, r1, a0, a1), fill});
      }
    };
    sector(a.out_start, a.out_end, base);
    sector(a.in_start, a.in_end, Darker(base, 0.55));
    if (chosen && a.in_end > a.out_start) {
      list_.polygons.push_back(
          {AnnularSector(centre_, r0 - 1, r1 + 1, a.out_start, a.in_end), 0, kSelectColor, 2.5f});
    }
    const double mid = (a.out_start + a.in_end) / 2;
    if (k <= 48 && a.in_end - a.out_start > 0.03) {
      const PointF p = OnCircle(centre_, r1 + rings * (kRingWidth + 4) + 12, mid);
      list_.texts.push_back({p.x, p.y, units[u].name, kTextColor,
                             p.x < centre_.x - 4   ? Text::Align::kRight
                             : p.x > centre_.x + 4 ? Text::Align::kLeft
                                                   : Text::Align::kCenter,
                             false, 7.5f});
    }
  }
  // Ancestor rings (host, then rack), spanning their children's arcs.
  const float ring_base = radius_ + 2 + kBaseThickness + kSelfThickness + 4;
  for (int ring = 0; ring < rings; ++ring) {
    const ClusterLevel up = static_cast<ClusterLevel>(static_cast<int>(level_) + 1 + ring);
    const auto& parents = hierarchy_->units(up);
    const float r0 = ring_base + ring * (kRingWidth + 4), r1 = r0 + kRingWidth;
    std::vector<double> from(parents.size(), 1e9), to(parents.size(), -1e9);
    for (size_t u = 0; u < k; ++u) {
      if (arcs_[u].in_end <= arcs_[u].out_start) continue;
      const size_t p = hierarchy_->UnitOf(up, units[u].devices.front());
      from[p] = std::min(from[p], arcs_[u].out_start);
      to[p] = std::max(to[p], arcs_[u].in_end);
    }
    for (size_t p = 0; p < parents.size(); ++p) {
      const double a0 = from[p], a1 = to[p];
      if (a1 <= a0) continue;
      list_.polygons.push_back(
          {AnnularSector(centre_, r0, r1, a0, a1),
           ring == 0 && up == ClusterLevel::kHost ? Rgba(176, 190, 197) : Rgba(120, 144, 156)});
      if (parents.size() <= 24 && a1 - a0 > 0.15 && (rings == ring + 1)) {
        const PointF t = OnCircle(centre_, r1 + 10, (a0 + a1) / 2);
        list_.texts.push_back({t.x, t.y, parents[p].name, kTextColor,
                               t.x < centre_.x ? Text::Align::kRight : Text::Align::kLeft, true});
      }
    }
  }
  size_t bundled = 0;
  for (const Bundle& b : bundles_) bundled += b.flows;
  list_.texts.push_back(
      {8, 14,
       Cat("Traffic between ", ClusterLevelName(level_), "s (",
           measure_ == Measure::kBytes ? "bytes" : "transfer time", "): ", all_ribbons, " flows",
           bundles_.empty() ? ""
                            : Cat(", ", bundled, " thin ones in ", bundles_.size(), " bundles by ",
                                  ClusterLevelName(BundleLevel(level_)), " pair"),
           "; arc = sent then received (darker), thickness = self-traffic"),
       kTextColor, Text::Align::kLeft, true});
}

std::optional<size_t> ChordLayout::ArcAt(float x, float y) {
  Draw();
  const float d = std::hypot(x - centre_.x, y - centre_.y);
  for (size_t u = 0; u < arcs_.size(); ++u) {
    if (d < radius_ || d > radius_ + 2 + arcs_[u].thickness + 2) continue;
    double a = std::atan2(x - centre_.x, -(y - centre_.y));
    if (a < 0) a += 2 * kPi;
    if (a >= arcs_[u].out_start && a <= arcs_[u].in_end) return u;
  }
  return std::nullopt;
}

std::optional<size_t> ChordLayout::RibbonAt(float x, float y) {
  Draw();
  // The drawn order is lightest first: the topmost is the heaviest hit.
  for (size_t i = 0; i < ribbons_.size(); ++i) {
    if (!ribbons_[i].polygon.empty() && Inside(ribbons_[i].polygon, x, y)) return i;
  }
  return std::nullopt;
}

size_t ChordLayout::BundleParent(size_t unit) {
  if (level_ == ClusterLevel::kRack) return unit;
  return hierarchy_->units(level_)[unit].parent;
}

std::optional<size_t> ChordLayout::BundleAt(float x, float y) {
  Draw();
  // Drawn lightest first: the topmost hit is the heaviest.
  std::optional<size_t> best;
  for (size_t i = 0; i < bundles_.size(); ++i) {
    if (!Inside(bundles_[i].polygon, x, y)) continue;
    if (!best || bundles_[i].value > bundles_[*best].value) best = i;
  }
  return best;
}

std::string ChordLayout::TooltipAt(float x, float y) {
  const auto& units = hierarchy_->units(level_);
  auto fmt = [&](double v) {
    return measure_ == Measure::kBytes ? FormatBytes(v) : FormatDuration(v);
  };
  if (const auto a = ArcAt(x, y)) {
    const Arc& arc = arcs_[*a];
    return Cat(units[arc.unit].name, " (", units[arc.unit].devices.size(), " devices)\nsent ",
               fmt(arc.out), ", received ", fmt(arc.in), ", inside itself ", fmt(arc.self));
  }
  if (const auto r = RibbonAt(x, y)) {
    const Ribbon& ribbon = ribbons_[*r];
    const std::vector<TrafficModel::Cell>& cells = hierarchy_->Aggregate(level_);
    const TrafficModel::Cell& c = cells[ribbon.src * units.size() + ribbon.dst];
    return Cat(units[ribbon.src].name, " -> ", units[ribbon.dst].name, "\n",
               FormatBytes(static_cast<double>(c.bytes)), " in ", c.messages, " messages, ",
               FormatDuration(static_cast<double>(c.duration_ns)), " transfer time, ",
               FormatBytes(c.bytes_per_second()), "/s");
  }
  if (const auto b = BundleAt(x, y)) {
    const Bundle& bundle = bundles_[*b];
    const auto& parents = hierarchy_->units(BundleLevel(level_));
    return Cat(parents[bundle.src_parent].name, " -> ", parents[bundle.dst_parent].name, ": ",
               bundle.flows, " flows between ", ClusterLevelName(level_), "s, each under ",
               kMinRibbonPx, " px, drawn as one; ", fmt(bundle.value), " in all");
  }
  return "";
}

bool ChordLayout::ClickAt(float x, float y) {
  const uint64_t before = selection_->devices_version();
  const auto& units = hierarchy_->units(level_);
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  auto ranks = [&](size_t u) {
    std::vector<uint32_t> out;
    for (size_t d : units[u].devices) out.push_back(m.devices[d].rank);
    return out;
  };
  if (const auto a = ArcAt(x, y)) {
    selection_->SelectDevices(ranks(arcs_[*a].unit));
  } else if (const auto r = RibbonAt(x, y)) {
    const Ribbon& ribbon = ribbons_[*r];
    if (level_ == ClusterLevel::kDevice) {
      selection_->SelectLink(m.devices[units[ribbon.src].devices[0]].rank,
                             m.devices[units[ribbon.dst].devices[0]].rank);
    } else {
      std::vector<uint32_t> both = ranks(ribbon.src);
      const std::vector<uint32_t> more = ranks(ribbon.dst);
      both.insert(both.end(), more.begin(), more.end());
      selection_->SelectDevices(both);
    }
  } else if (const auto b = BundleAt(x, y)) {
    // Every device of the two parents.
    std::vector<uint32_t> both;
    for (size_t u = 0; u < units.size(); ++u) {
      const size_t p = BundleParent(u);
      if (p != bundles_[*b].src_parent && p != bundles_[*b].dst_parent) continue;
      const std::vector<uint32_t> more = ranks(u);
      both.insert(both.end(), more.begin(), more.end());
    }
    selection_->SelectDevices(both);
  } else {
    selection_->ClearDevices();
  }
  return selection_->devices_version() != before;
}

}  // namespace trainscope::viewer
