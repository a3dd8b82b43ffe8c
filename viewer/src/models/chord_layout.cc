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

void ChordLayout::SetLevel(ClusterLevel level) {
  if (level != level_) stale_ = true;
  SetField(&level_, level);
}

void ChordLayout::SetMeasure(Measure measure) {
  if (measure != measure_) stale_ = true;
  SetField(&measure_, measure);
}

void ChordLayout::SetCrossingReduction(bool on) {
  if (on != reduce_crossings_) stale_ = true;
  SetField(&reduce_crossings_, on);
}

void ChordLayout::SetTransition(double t) { SetField(&progress_, std::clamp(t, 0.0, 1.0)); }

const DrawList& ChordLayout::Draw() {
  if (stale_ || built_hierarchy_ != hierarchy_->version() ||
      built_traffic_ != hierarchy_->traffic()->version()) {
    Layout();
  }
  if (dirty_ || built_selection_ != selection_->devices_version()) Paint();
  return list_;
}

ChordLayout::Geometry ChordLayout::Interpolate(const Geometry& a, const Geometry& b, double t) {
  if (t >= 1 || a.arcs.size() != b.arcs.size()) return b;
  if (t <= 0) return a;
  auto mix = [t](double x, double y) { return x + (y - x) * t; };
  Geometry out;
  out.scale = mix(a.scale, b.scale);
  out.arcs = b.arcs;
  for (size_t u = 0; u < out.arcs.size(); ++u) {
    const Arc& x = a.arcs[u];
    Arc& y = out.arcs[u];
    y.out_start = mix(x.out_start, y.out_start), y.out_end = mix(x.out_end, y.out_end);
    y.in_start = mix(x.in_start, y.in_start), y.in_end = mix(x.in_end, y.in_end);
    y.out = mix(x.out, y.out), y.in = mix(x.in, y.in), y.self = mix(x.self, y.self);
    y.thickness = static_cast<float>(mix(x.thickness, y.thickness));
  }
  // A ribbon on one side only is, on the other, an empty one at the end of
  // its arcs' out and in intervals: then each arc's ribbons, mixed, still
  // tile the mixed arc.
  auto empty_at = [](const Geometry& g, const Ribbon& r) {
    Ribbon e = r;
    e.value = 0;
    e.src_start = e.src_end = g.arcs[r.src].out_end;
    e.dst_start = e.dst_end = g.arcs[r.dst].in_end;
    return e;
  };
  std::map<std::pair<size_t, size_t>, const Ribbon*> from;
  for (const Ribbon& r : a.ribbons) from[{r.src, r.dst}] = &r;
  auto add = [&](const Ribbon& x, const Ribbon& y) {
    Ribbon r;
    r.src = y.src, r.dst = y.dst;
    r.value = mix(x.value, y.value);
    r.src_start = mix(x.src_start, y.src_start), r.src_end = mix(x.src_end, y.src_end);
    r.dst_start = mix(x.dst_start, y.dst_start), r.dst_end = mix(x.dst_end, y.dst_end);
    r.selected = y.selected;
    out.ribbons.push_back(std::move(r));
  };
  for (const Ribbon& y : b.ribbons) {
    auto it = from.find({y.src, y.dst});
    if (it == from.end()) {
      add(empty_at(a, y), y);
    } else {
      add(*it->second, y);
      from.erase(it);
    }
  }
  for (const Ribbon& x : a.ribbons)
    if (from.count({x.src, x.dst}) != 0) add(x, empty_at(b, x));
  return out;
}

void ChordLayout::Layout() {
  stale_ = false;
  dirty_ = true;
  built_hierarchy_ = hierarchy_->version();
  built_traffic_ = hierarchy_->traffic()->version();
  const std::vector<ClusterHierarchy::Unit>& units = hierarchy_->units(level_);
  const size_t k = units.size();
  // What was shown becomes where a transition starts, when it shows the
  // same units.
  const bool same_units = built_level_ == level_ && target_.arcs.size() == k && k > 0;
  Geometry shown{arcs_, ribbons_, scale_};
  built_level_ = level_;
  target_ = Geometry{};
  const std::vector<TrafficModel::Cell>& cells = hierarchy_->Aggregate(level_);
  // Only the cells with traffic: a 1,024-device ring has a thousand among a
  // million, and walking all of them (a column at a time for the received
  // side) was most of a frame.
  const std::vector<std::pair<uint32_t, uint32_t>>& links = hierarchy_->Links(level_);
  auto value_of = [&](const TrafficModel::Cell& c) {
    return measure_ == Measure::kBytes ? static_cast<double>(c.bytes)
                                       : static_cast<double>(c.duration_ns);
  };
  std::vector<Arc>& arcs = target_.arcs;
  arcs.resize(k);
  double total = 0, max_self = 0;
  for (size_t u = 0; u < k; ++u) arcs[u].unit = u;
  for (const auto& [u, v] : links) {
    const double value = value_of(cells[u * k + v]);
    if (u == v) {
      arcs[u].self = value;
      max_self = std::max(max_self, value);
      continue;
    }
    arcs[u].out += value;
    arcs[v].in += value;
    total += 2 * value;
  }
  order_.resize(k);
  for (size_t u = 0; u < k; ++u) order_[u] = u;
  if (k == 0 || total <= 0) {
    target_.arcs.clear();
    no_traffic_ = k > 0;
    crossings_ = 0;
    return;
  }
  no_traffic_ = false;
  if (reduce_crossings_) order_ = CrossingReducingOrder();
  crossings_ = ChordOrder::CountCrossings(ChordOrder::Positions(order_), UndirectedLinks(level_));
  // Gaps: a small one between units, a larger one where the parent changes.
  // Each kind of gap takes at most a fixed share of the circle however many
  // there are (1,024 devices on 128 hosts: 128 parent changes), so the arcs
  // always keep most of it.
  auto parent_of = [&](size_t u) { return level_ == ClusterLevel::kRack ? 0 : units[u].parent; };
  auto parent_changes_after = [&](size_t i) {
    return k > 1 && parent_of(order_[(i + 1) % k]) != parent_of(order_[i]);
  };
  size_t parent_changes = 0;
  for (size_t i = 0; i < k; ++i) parent_changes += parent_changes_after(i);
  const double small_gap = std::min(0.01, 2 * kPi * 0.15 / static_cast<double>(k));
  const double big_gap =
      std::min(0.05, 2 * kPi * 0.1 / std::max<double>(1, static_cast<double>(parent_changes)));
  const double gaps = static_cast<double>(parent_changes) * big_gap +
                      static_cast<double>(k - parent_changes) * small_gap;
  const double scale = target_.scale = (2 * kPi - gaps) / total;
  double angle = 0;
  for (size_t i = 0; i < k; ++i) {
    Arc& a = arcs[order_[i]];
    a.out_start = angle;
    a.out_end = a.in_start = angle + a.out * scale;
    a.in_end = a.in_start + a.in * scale;
    a.thickness = kBaseThickness +
                  (max_self > 0 ? kSelfThickness * static_cast<float>(a.self / max_self) : 0);
    angle = a.in_end + (parent_changes_after(i) ? big_gap : small_gap);
  }

  // Ribbons: each end's interval holds its partners clockwise-farthest
  // first, so the ribbons leaving one arc fan out without crossing there.
  const std::vector<size_t> position = ChordOrder::Positions(order_);
  auto clockwise = [&](size_t from, size_t to) { return (position[to] + k - position[from]) % k; };
  std::vector<Ribbon>& ribbons = target_.ribbons;
  ribbons.reserve(links.size());
  for (const auto& [u, v] : links) {
    if (u == v) continue;
    const double value = value_of(cells[u * k + v]);
    if (value <= 0) continue;
    Ribbon r;
    r.src = u;
    r.dst = v;
    r.value = value;
    ribbons.push_back(std::move(r));
  }
  std::vector<size_t> by_src(ribbons.size()), by_dst(ribbons.size());
  for (size_t i = 0; i < ribbons.size(); ++i) by_src[i] = by_dst[i] = i;
  std::sort(by_src.begin(), by_src.end(), [&](size_t x, size_t y) {
    const Ribbon &a = ribbons[x], &b = ribbons[y];
    if (a.src != b.src) return a.src < b.src;
    return clockwise(a.src, a.dst) > clockwise(b.src, b.dst);
  });
  std::sort(by_dst.begin(), by_dst.end(), [&](size_t x, size_t y) {
    const Ribbon &a = ribbons[x], &b = ribbons[y];
    if (a.dst != b.dst) return a.dst < b.dst;
    return clockwise(a.dst, a.src) > clockwise(b.dst, b.src);
  });
  std::vector<double> out_cursor(k), in_cursor(k);
  for (size_t u = 0; u < k; ++u) out_cursor[u] = arcs[u].out_start, in_cursor[u] = arcs[u].in_start;
  for (size_t i : by_src) {
    Ribbon& r = ribbons[i];
    r.src_start = out_cursor[r.src];
    r.src_end = out_cursor[r.src] += r.value * scale;
  }
  for (size_t i : by_dst) {
    Ribbon& r = ribbons[i];
    r.dst_start = in_cursor[r.dst];
    r.dst_end = in_cursor[r.dst] += r.value * scale;
  }
  if (same_units && !shown.arcs.empty()) {
    from_ = std::move(shown);
    ++transitions_;
  } else {
    from_ = target_;
  }
  progress_ = 1;
}

std::vector<ChordOrder::Link> ChordLayout::UndirectedLinks(ClusterLevel level) {
  const std::vector<TrafficModel::Cell>& cells = hierarchy_->Aggregate(level);
  const size_t k = hierarchy_->units(level).size();
  std::map<std::pair<uint32_t, uint32_t>, double> weight;
  for (const auto& [u, v] : hierarchy_->Links(level)) {
    if (u == v) continue;
    const TrafficModel::Cell& c = cells[u * k + v];
    weight[std::minmax(u, v)] += measure_ == Measure::kBytes ? static_cast<double>(c.bytes)
                                                             : static_cast<double>(c.duration_ns);
  }
  std::vector<ChordOrder::Link> out;
  out.reserve(weight.size());
  for (const auto& [pair, w] : weight) out.push_back({pair.first, pair.second, w});
  return out;
}

std::vector<size_t> ChordLayout::CrossingReducingOrder() {
  // Hosts within their racks first (at the host level, or to place the
  // devices' hosts), then the level's units within their parents; racks
  // move freely at the rack level.
  auto within = [&](ClusterLevel level, std::vector<size_t> order) {
    const auto& units = hierarchy_->units(level);
    std::vector<size_t> group(units.size(), 0);
    if (level != ClusterLevel::kRack)
      for (size_t u = 0; u < units.size(); ++u) group[u] = units[u].parent;
    return ChordOrder::Reduce(std::move(order), group, UndirectedLinks(level));
  };
  auto identity = [](size_t n) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    return order;
  };
  if (level_ == ClusterLevel::kRack) return within(level_, identity(order_.size()));
  const std::vector<size_t> hosts =
      within(ClusterLevel::kHost, identity(hierarchy_->units(ClusterLevel::kHost).size()));
  if (level_ == ClusterLevel::kHost) return hosts;
  // Devices: their hosts in the order found, each host's devices a run.
  std::vector<size_t> devices;
  devices.reserve(order_.size());
  const auto& host_units = hierarchy_->units(ClusterLevel::kHost);
  for (size_t h : hosts)
    for (size_t d : host_units[h].devices) devices.push_back(hierarchy_->UnitOf(level_, d));
  return within(level_, std::move(devices));
}

void ChordLayout::Paint() {
  dirty_ = false;
  built_selection_ = selection_->devices_version();
  list_.Clear();
  bundles_.clear();
  const Geometry shown = progress_ >= 1 ? target_ : Interpolate(from_, target_, progress_);
  arcs_ = shown.arcs;
  ribbons_ = shown.ribbons;
  scale_ = shown.scale;
  const float w = static_cast<float>(width_), h = static_cast<float>(height_);
  list_.backgrounds.push_back({{0, 0, w, h}, kBackgroundColor});
  const std::vector<ClusterHierarchy::Unit>& units = hierarchy_->units(level_);
  const size_t k = units.size();
  const int rings = level_ == ClusterLevel::kDevice ? 2 : level_ == ClusterLevel::kHost ? 1 : 0;
  centre_ = {w / 2, kTop + (h - kTop) / 2};
  radius_ = std::max(20.0f, std::min(w, h - kTop) / 2 - 40 - kBaseThickness - kSelfThickness -
                                rings * (kRingWidth + 4));
  if (arcs_.empty()) {
    list_.texts.push_back({w / 2, h / 2,
                           !no_traffic_ ? "no devices yet"
                                        : Cat("no traffic between ", ClusterLevelName(level_),
                                              "s (only inside them): choose a finer level"),
                           kTextColor, Text::Align::kCenter});
    return;
  }
  const TrafficModel::Matrix& m = hierarchy_->traffic()->matrix();
  std::optional<std::pair<size_t, size_t>> selected;
  if (const auto link = selection_->selected_link()) {
    auto a = m.IndexOf(link->first), b = m.IndexOf(link->second);
    if (a && b) selected = {hierarchy_->UnitOf(level_, *a), hierarchy_->UnitOf(level_, *b)};
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
    r.polygon.clear();
    r.bundle = SIZE_MAX;
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
           "; arc = sent then received (darker), thickness = self-traffic; ",
           reduce_crossings_ ? "order reduces crossings: " : "hierarchy order: ", crossings_,
           " crossings"),
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
