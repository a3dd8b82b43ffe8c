#include "trainscope/viewer/traffic_matrix_layout.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

// The models carry no Abseil; a tiny StrCat for labels.
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

constexpr float kLeft = 118;
constexpr float kTop = 74;
constexpr float kRightPanel = 260;  // row bars and the colour legend
constexpr float kBarsWidth = 150;
constexpr float kBoxRowHeight = 20;
constexpr float kBoxLabelWidth = 170;

const char* LocalityName(LinkLocality locality) {
  switch (locality) {
    case LinkLocality::kSameDevice:
      return "same device";
    case LinkLocality::kSameHost:
      return "same host";
    case LinkLocality::kCrossHost:
      return "across hosts";
    case LinkLocality::kUnknown:
      break;
  }
  return "locality unknown";
}

std::string Rate(double bytes_per_second) { return Cat(FormatBytes(bytes_per_second), "/s"); }

std::string DeviceName(const TrafficModel::Device& d) {
  return d.host.empty() ? Cat("rank ", d.rank) : Cat("rank ", d.rank, " (", d.host, ")");
}

}  // namespace

TrafficMatrixLayout::TrafficMatrixLayout(TrafficModel* model) : model_(model) {}

void TrafficMatrixLayout::SetViewport(int width, int height) {
  if (width == width_ && height == height_) return;
  width_ = width;
  height_ = height;
  dirty_ = true;
}

Color TrafficMatrixLayout::HeatColor(double fraction) {
  const double f = std::clamp(fraction, 0.0, 1.0);
  // White -> orange -> dark red, so small and large values differ in hue
  // as well as in lightness.
  auto mix = [](double a, double b, double t) { return static_cast<uint32_t>(a + (b - a) * t); };
  if (f < 0.5) {
    const double t = f / 0.5;
    return Rgba(mix(255, 252, t), mix(255, 141, t), mix(255, 89, t));
  }
  const double t = (f - 0.5) / 0.5;
  return Rgba(mix(252, 127, t), mix(141, 0, t), mix(89, 0, t));
}

void TrafficMatrixLayout::SetFocus(const std::set<uint32_t>& ranks) {
  if (ranks == focus_) return;
  focus_ = ranks;
  dirty_ = true;
}

void TrafficMatrixLayout::SetSelectedLink(std::optional<std::pair<uint32_t, uint32_t>> link) {
  if (link == selected_link_) return;
  selected_link_ = link;
  dirty_ = true;
}

const TrafficModel::Matrix& TrafficMatrixLayout::shown() {
  if (dirty_ || built_version_ != model_->version()) Rebuild();
  return focus_.empty() ? model_->matrix() : focused_;
}

const DrawList& TrafficMatrixLayout::Draw() {
  if (dirty_ || built_version_ != model_->version()) Rebuild();
  return list_;
}

void TrafficMatrixLayout::Rebuild() {
  dirty_ = false;
  built_version_ = model_->version();
  list_.Clear();
  boxes_.clear();
  if (!focus_.empty()) focused_ = TrafficModel::Restrict(model_->matrix(), focus_);
  const TrafficModel::Matrix& m = focus_.empty() ? model_->matrix() : focused_;
  const size_t n = m.size();
  list_.backgrounds.push_back(
      {{0, 0, static_cast<float>(width_), static_cast<float>(height_)}, kBackgroundColor});
  if (n == 0) {
    matrix_ = bars_ = {};
    cell_ = 0;
    list_.texts.push_back({static_cast<float>(width_) / 2, static_cast<float>(height_) / 2,
                           "no traffic: the job's steps carry no per-pair traffic yet", kTextColor,
                           Text::Align::kCenter});
    return;
  }
  const float box_panel = kBoxRowHeight * kBoxPlots + 44;
  const float side_limit = std::min(static_cast<float>(width_) - kLeft - kRightPanel - 16,
                                    static_cast<float>(height_) - kTop - box_panel - 12);
  const float side = std::max(side_limit, 16.0f);
  cell_ = side >= static_cast<float>(n) * 2 ? std::floor(side / static_cast<float>(n))
                                            : side / static_cast<float>(n);
  matrix_ = {kLeft, kTop, cell_ * static_cast<float>(n), cell_ * static_cast<float>(n)};

  // Title.
  std::string range = "no steps with traffic selected";
  if (m.first_step.has_value()) {
    range = *m.first_step == *m.last_step ? Cat("step ", *m.first_step)
                                          : Cat("steps ", *m.first_step, "-", *m.last_step);
  }
  list_.texts.push_back(
      {8, 14,
       Cat("Traffic between devices, ", range, ": colour = transfer time (row sends to column)"),
       kTextColor, Text::Align::kLeft, true});

  // Cells: one pixel each, scaled without smoothing.
  int64_t max_ns = 0;
  for (const TrafficModel::Cell& c : m.cells) max_ns = std::max(max_ns, c.duration_ns);
  auto heat = [&](const TrafficModel::Cell& c) {
    return c.steps == 0 ? 0.0
                        : std::max(1e-9, max_ns > 0 ? static_cast<double>(c.duration_ns) /
                                                          static_cast<double>(max_ns)
                                                    : 0.0);
  };
  // More devices than pixels: each pixel shows the heaviest of the cells it
  // covers, so one slow link among a thousand devices is not sampled away.
  const size_t px = cell_ >= 1 ? n : std::max<size_t>(1, static_cast<size_t>(matrix_.w));
  std::vector<double> pooled(px * px, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const size_t a = i * px / n;
    for (size_t j = 0; j < n; ++j) {
      double& p = pooled[a * px + j * px / n];
      p = std::max(p, heat(m.at(i, j)));
    }
  }
  PixelImage image;
  image.dest = matrix_;
  image.width = image.height = static_cast<int>(px);
  image.pixels.resize(px * px);
  for (size_t k = 0; k < px * px; ++k)
    image.pixels[k] = pooled[k] == 0 ? kEmptyColor : HeatColor(pooled[k]);
  list_.images.push_back(std::move(image));
  list_.rects.push_back({matrix_, 0, kAxisColor});

  // Host blocks: separators and labels; rank labels when cells are legible.
  size_t block_start = 0;
  for (size_t i = 1; i <= n; ++i) {
    if (i < n && m.devices[i].host == m.devices[block_start].host) continue;
    const float a = matrix_.x + cell_ * static_cast<float>(block_start);
    const float b = matrix_.x + cell_ * static_cast<float>(i);
    const float ya = matrix_.y + cell_ * static_cast<float>(block_start);
    const float yb = matrix_.y + cell_ * static_cast<float>(i);
    const std::string host =
        m.devices[block_start].host.empty() ? "?" : m.devices[block_start].host;
    list_.texts.push_back({(a + b) / 2, kTop - 40, host, kTextColor, Text::Align::kCenter, true});
    list_.texts.push_back({6, (ya + yb) / 2, host, kTextColor, Text::Align::kLeft, true});
    if (i < n) {
      list_.lines.push_back({{b, matrix_.y}, {b, matrix_.y + matrix_.h}, kAxisColor, 1.5f});
      list_.lines.push_back({{matrix_.x, yb}, {matrix_.x + matrix_.w, yb}, kAxisColor, 1.5f});
    }
    block_start = i;
  }
  if (cell_ >= 11) {
    for (size_t i = 0; i < n; ++i) {
      const float c = cell_ * (static_cast<float>(i) + 0.5f);
      const std::string label = Cat(m.devices[i].rank);
      list_.texts.push_back(
          {matrix_.x - 4, matrix_.y + c, label, kTextColor, Text::Align::kRight, false, 7.5f});
      list_.texts.push_back(
          {matrix_.x + c, kTop - 12, label, kTextColor, Text::Align::kCenter, false, 7.5f});
    }
  }

  // The cell with the most transfer time, outlined so it is found at once
  // even where cells are a pixel wide.
  if (const auto heaviest = TrafficModel::HeaviestCell(m)) {
    const RectF r = CellRect(heaviest->first, heaviest->second);
    const float grow = std::max(0.0f, (8 - r.w) / 2);
    list_.overlay_rects.push_back(
        {{r.x - grow - 1, r.y - grow - 1, r.w + 2 * grow + 2, r.h + 2 * grow + 2}, 0, kTextColor});
  }

  // The link selected in another view (or its alert), outlined in blue.
  if (selected_link_.has_value()) {
    const auto a = m.IndexOf(selected_link_->first), b = m.IndexOf(selected_link_->second);
    if (a && b) {
      const RectF r = CellRect(*a, *b);
      const float grow = std::max(0.0f, (12 - r.w) / 2);
      list_.overlay_rects.push_back(
          {{r.x - grow - 3, r.y - grow - 3, r.w + 2 * grow + 6, r.h + 2 * grow + 6},
           0,
           Rgba(25, 118, 210)});
      list_.overlay_rects.push_back(
          {{r.x - grow - 4, r.y - grow - 4, r.w + 2 * grow + 8, r.h + 2 * grow + 8},
           0,
           Rgba(25, 118, 210)});
    }
  }
  if (!focus_.empty()) {
    list_.texts.push_back({8, 32,
                           Cat("showing the ", n, " selected devices of ", model_->matrix().size(),
                               " (select none to see all)"),
                           Rgba(25, 118, 210)});
  }

  // Per-row bars: bytes sent (upper half), transfer time as sender (lower).
  bars_ = {matrix_.x + matrix_.w + 14, matrix_.y, kBarsWidth, matrix_.h};
  uint64_t max_bytes = 0;
  int64_t max_row_ns = 0;
  for (size_t i = 0; i < n; ++i) {
    max_bytes = std::max(max_bytes, m.row_bytes[i]);
    max_row_ns = std::max(max_row_ns, m.row_ns[i]);
  }
  list_.texts.push_back({bars_.x, kTop - 40, "bytes sent", kBytesBarColor});
  list_.texts.push_back({bars_.x, kTop - 26, "transfer time", kTimeBarColor});
  for (size_t i = 0; i < n; ++i) {
    const float y = matrix_.y + cell_ * static_cast<float>(i);
    const float h = std::max(0.5f, cell_ / 2 - (cell_ >= 6 ? 1 : 0));
    if (max_bytes > 0 && m.row_bytes[i] > 0) {
      const float w = bars_.w * static_cast<float>(static_cast<double>(m.row_bytes[i]) /
                                                   static_cast<double>(max_bytes));
      list_.rects.push_back({{bars_.x, y, std::max(1.0f, w), h}, kBytesBarColor});
    }
    if (max_row_ns > 0 && m.row_ns[i] > 0) {
      const float w = bars_.w * static_cast<float>(static_cast<double>(m.row_ns[i]) /
                                                   static_cast<double>(max_row_ns));
      list_.rects.push_back({{bars_.x, y + cell_ / 2, std::max(1.0f, w), h}, kTimeBarColor});
    }
  }
  list_.lines.push_back({{bars_.x, bars_.y}, {bars_.x, bars_.y + bars_.h}, kAxisColor});

  // Colour legend.
  const RectF legend = {bars_.x + bars_.w + 24, matrix_.y, 14, std::min(matrix_.h, 200.0f)};
  PixelImage scale;
  scale.dest = legend;
  scale.width = 1;
  scale.height = 64;
  for (int k = 0; k < 64; ++k) scale.pixels.push_back(HeatColor(1.0 - k / 63.0));
  list_.images.push_back(std::move(scale));
  list_.rects.push_back({legend, 0, kAxisColor});
  list_.texts.push_back({legend.x + legend.w + 4, legend.y + 4, FormatDuration(max_ns)});
  list_.texts.push_back({legend.x + legend.w + 4, legend.y + legend.h - 4, "0"});

  // Box plots: bandwidth per step of the links with the most transfer time.
  std::vector<std::pair<size_t, size_t>> links;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (m.at(i, j).steps > 0) links.push_back({i, j});
  std::stable_sort(links.begin(), links.end(), [&](const auto& a, const auto& b) {
    return m.at(a.first, a.second).duration_ns > m.at(b.first, b.second).duration_ns;
  });
  if (links.size() > kBoxPlots) links.resize(kBoxPlots);
  double max_rate = 0;
  for (const auto& [i, j] : links) {
    LinkBox link{i, j,
                 TrafficModel::Box(model_->LinkBandwidths(m.devices[i].rank, m.devices[j].rank))};
    if (link.box.count == 0) continue;
    max_rate = std::max(max_rate, link.box.max);
    boxes_.push_back(link);
  }
  const float box_top = matrix_.y + matrix_.h + 34;
  if (max_rate <= 0 && !boxes_.empty()) {
    // Transfer time without bytes (e.g. an imported trace that names no
    // sizes): a bandwidth axis would be all zeros.
    boxes_.clear();
    list_.texts.push_back(
        {8, box_top + 6, "no bandwidth: these links' bytes are unknown (0 B)", kTextColor});
  }
  list_.texts.push_back({8, box_top - 14,
                         "Bandwidth per step of the links with the most transfer time", kTextColor,
                         Text::Align::kLeft, true});
  const float plot_x = 8 + kBoxLabelWidth;
  const float plot_w = std::max(40.0f, static_cast<float>(width_) - plot_x - 90);
  auto x_of = [&](double rate) {
    return plot_x + static_cast<float>(max_rate > 0 ? rate / max_rate : 0) * plot_w;
  };
  for (size_t k = 0; k < boxes_.size(); ++k) {
    LinkBox& link = boxes_[k];
    const float y = box_top + kBoxRowHeight * static_cast<float>(k);
    link.rect = {8, y, plot_x + plot_w - 8, kBoxRowHeight};
    const float cy = y + kBoxRowHeight / 2;
    list_.texts.push_back({8, cy,
                           Cat(m.devices[link.src].rank, " -> ", m.devices[link.dst].rank, "  ",
                               FormatDuration(m.at(link.src, link.dst).duration_ns)),
                           kTextColor});
    const Color color =
        HeatColor(max_ns > 0 ? static_cast<double>(m.at(link.src, link.dst).duration_ns) /
                                   static_cast<double>(max_ns)
                             : 0.0);
    list_.lines.push_back({{x_of(link.box.min), cy}, {x_of(link.box.max), cy}, kAxisColor});
    list_.rects.push_back(
        {{x_of(link.box.q1), y + 3, std::max(2.0f, x_of(link.box.q3) - x_of(link.box.q1)),
          kBoxRowHeight - 6},
         color,
         kAxisColor});
    list_.lines.push_back({{x_of(link.box.median), y + 2},
                           {x_of(link.box.median), y + kBoxRowHeight - 2},
                           kTextColor,
                           2});
  }
  if (!boxes_.empty()) {
    const float axis_y = box_top + kBoxRowHeight * static_cast<float>(boxes_.size()) + 4;
    list_.lines.push_back({{plot_x, axis_y}, {plot_x + plot_w, axis_y}, kAxisColor});
    list_.texts.push_back({plot_x, axis_y + 10, "0 B/s", kTextColor, Text::Align::kCenter});
    list_.texts.push_back(
        {plot_x + plot_w, axis_y + 10, Rate(max_rate), kTextColor, Text::Align::kCenter});
  }
}

RectF TrafficMatrixLayout::CellRect(size_t src, size_t dst) {
  Draw();
  return {matrix_.x + cell_ * static_cast<float>(dst), matrix_.y + cell_ * static_cast<float>(src),
          cell_, cell_};
}

std::optional<std::pair<size_t, size_t>> TrafficMatrixLayout::CellAt(float x, float y) {
  Draw();
  if (cell_ <= 0 || !matrix_.Contains(x, y)) return std::nullopt;
  const size_t n = shown().size();
  const size_t col = std::min(n - 1, static_cast<size_t>((x - matrix_.x) / cell_));
  const size_t row = std::min(n - 1, static_cast<size_t>((y - matrix_.y) / cell_));
  return std::make_pair(row, col);
}

std::string TrafficMatrixLayout::CellText(size_t src, size_t dst) {
  const TrafficModel::Matrix& m = shown();
  const TrafficModel::Cell& c = m.at(src, dst);
  std::string text = Cat(DeviceName(m.devices[src]), " -> ", DeviceName(m.devices[dst]));
  if (c.steps == 0) return Cat(text, "\nno traffic");
  text += Cat("\n", LocalityName(c.locality), c.exact ? ", send/recv counted" : "", "\n",
              FormatBytes(static_cast<double>(c.bytes)), " in ", c.messages, " messages over ",
              c.steps, " steps\ntransfer time ", FormatDuration(c.duration_ns), ", ",
              Rate(c.bytes_per_second()));
  const TrafficModel::BoxStats box =
      TrafficModel::Box(model_->LinkBandwidths(m.devices[src].rank, m.devices[dst].rank));
  if (box.count > 1) {
    text += Cat("\nper step: min ", Rate(box.min), ", median ", Rate(box.median), ", max ",
                Rate(box.max));
  }
  return text;
}

std::string TrafficMatrixLayout::TooltipAt(float x, float y) {
  if (const auto cell = CellAt(x, y)) return CellText(cell->first, cell->second);
  const TrafficModel::Matrix& m = shown();
  if (bars_.Contains(x, y) && cell_ > 0) {
    const size_t row = std::min(m.size() - 1, static_cast<size_t>((y - bars_.y) / cell_));
    return Cat(DeviceName(m.devices[row]), " sent ",
               FormatBytes(static_cast<double>(m.row_bytes[row])), ", transfer time ",
               FormatDuration(m.row_ns[row]));
  }
  for (const LinkBox& link : boxes_) {
    if (link.rect.Contains(x, y)) return CellText(link.src, link.dst);
  }
  return "";
}

}  // namespace trainscope::viewer
