#include "trainscope/viewer/marey_layout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <utility>

#include "trainscope/viewer/marey_axes.h"
#include "trainscope/viewer/marey_line_charts.h"
#include "trainscope/viewer/marey_palette.h"
#include "trainscope/viewer/marey_pixel_map.h"

namespace trainscope::viewer {
namespace {

constexpr Color kSelectedStepColor = Rgba(232, 240, 252);
constexpr Color kFocusRowColor = Rgba(253, 232, 232);

Color ClassColor(OpClass c) { return MareyPalette::ForClass(c); }

}  // namespace

MareyLayout::MareyLayout(Options options) : options_(options) {
  options_.bins = std::max<uint32_t>(1, options_.bins);
}

void MareyLayout::Lay(const Frame& frame) {
  frame_ = &frame;
  view_ = frame.view;
  list_.Clear();
  link_ends_.clear();
  stats_ = {};
  list_.backgrounds.push_back(
      {{0, 0, static_cast<float>(view_.width), static_cast<float>(view_.height)},
       kBackgroundColor});
  list_.texts.push_back({12, 14, "Marey graph", kTextColor, Text::Align::kLeft, true, 11});
  const MareyAxes::Summary summary{
      .devices = frame.devices, .operators = frame.operators, .bins = options_.bins};
  const size_t n = rows().size();
  stats_.rows = n;
  if (n == 0) {
    list_.texts.push_back({view_.plot.x + view_.plot.w / 2, view_.plot.y + view_.plot.h / 2,
                           "No operators yet", kAxisColor, Text::Align::kCenter});
    MareyAxes::AddTimeAxis(view_, frame.origin_ns, summary, &list_);
    frame_ = nullptr;
    return;
  }
  // Rows share the plot's height by weight (a GPU device's CPU row is
  // thinner than its streams').
  float weights = 0;
  for (const MareyRow& row : rows()) weights += std::max(row.weight, 0.05f);
  pitch_ = view_.plot.h / weights;
  const bool dense = pitch_ < options_.dense_row_px;
  stats_.dense = dense;
  row_tops_.resize(n);
  float top = view_.plot.y;
  for (size_t i = 0; i < n; ++i) {
    MareyRow& row = rows()[i];
    row.top = top;
    row.height = pitch_ * std::max(row.weight, 0.05f);
    row.axis_y = top + row.height / 2;
    row_tops_[i] = top;
    top += row.height;
  }

  // Behind everything: the selected step and the rows of a focused alert.
  list_.backgrounds.push_back({view_.plot, Rgba(252, 252, 253), WithAlpha(kAxisColor, 110)});
  if (frame_->steps != nullptr) {
    stats_.steps_shown = MareyAxes::AddStepAxis(view_, *frame_->steps, &list_);
  }
  if (frame_->selected_step.has_value()) {
    auto step = frame_->steps->find(*frame_->selected_step);
    if (step != frame_->steps->end() && !view_.raw) {
      const float x0 = std::max(view_.plot.x, view_.TimeToX(step->second.start_ns));
      const float x1 = std::min(view_.plot.x + view_.plot.w, view_.TimeToX(step->second.end_ns));
      if (x1 > x0)
        list_.backgrounds.push_back(
            {{x0, view_.plot.y, x1 - x0, view_.plot.h}, kSelectedStepColor});
    }
  }
  auto row_in = [&](size_t i, const std::vector<uint32_t>& ranks) {
    return rows()[i].kind == MareyRowKind::kDevice &&
           std::binary_search(ranks.begin(), ranks.end(), rows()[i].rank);
  };
  for (size_t i = 0; i < n; ++i) {
    // The selection's blue wins over a focused alert's red: a slow link's
    // alert focuses and selects the same two devices, and blue is what the
    // other views show them in.
    const bool selected = row_in(i, frame_->selected_ranks);
    if (selected || (frame_->focus_rows_tinted && row_in(i, frame_->focus_ranks))) {
      list_.backgrounds.push_back({{view_.plot.x, rows()[i].top, view_.plot.w, rows()[i].height},
                                   selected ? kSelectTintColor : kFocusRowColor});
    }
    if (selected) {
      // A solid mark at the axis' start, seen even over dense rows' pixels.
      list_.overlay_rects.push_back(
          {{view_.plot.x - 4, rows()[i].top, 3, std::max(1.0f, rows()[i].height)}, kSelectColor});
    }
  }
  MareyAxes::AddTimeAxis(view_, frame.origin_ns, summary, &list_);

  row_merged_.assign(n, std::vector<uint8_t>(options_.bins, 0));
  if (dense) {
    LayoutDenseRows();
  } else {
    // A row joins the rows of the same kind (CPU or GPU stream) of the
    // device above it: the previous block of rows (a device's rows, or one
    // group row). Streams join every stream above, so one collective's NCCL
    // kernels meet whichever streams they ran on (keys match only there).
    static const std::map<uint64_t, StepRecord> kNoSteps;
    const MareyLineCharts charts(view_, frame_->steps != nullptr ? *frame_->steps : kNoSteps);
    std::vector<RowLayout> previous, current;
    std::vector<size_t> previous_rows, current_rows;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && !SameDevice(i - 1, i)) {
        std::swap(previous, current);
        std::swap(previous_rows, current_rows);
        current.clear();
        current_rows.clear();
      }
      current.emplace_back();
      current_rows.push_back(i);
      // The axis goes under the bands.
      list_.backgrounds.push_back(
          {{view_.plot.x, rows()[i].axis_y - 0.5f, view_.plot.w, 1}, WithAlpha(kAxisColor, 150)});
      LayoutRow(i, &current.back(), nullptr, &stats_);
      for (size_t p = 0; p < previous.size(); ++p) {
        const size_t above = previous_rows[p];
        if (rows()[above].gpu != rows()[i].gpu) continue;
        // Compute and collectives join only within a pipeline stage: other
        // stages run other layers, whatever their operators are called.
        const int a = frame_->stages[above], b = frame_->stages[i];
        const bool same_stage = a < 0 || b < 0 || a == b;
        // Across streams only NCCL kernels join (one collective's kernels
        // may run on other streams per device); kernels and copies join their
        // twins on the same stream, or the picture fills with crossing lines.
        const bool collectives_only =
            rows()[i].gpu && rows()[above].gpu_stream != rows()[i].gpu_stream;
        // Merged bins join only adjacent rows: across other rows (a GPU
        // device's streams) their wide translucent bands would wash over
        // those rows and cost most of the frame's painting.
        stats_.joins +=
            MareyJoins::Add(previous[p], current.back(), rows()[above].axis_y + BandHalf(above),
                            rows()[i].axis_y - BandHalf(i),
                            {.same_stage = same_stage,
                             .collectives_only = collectives_only,
                             .merged_bins = above + 1 == i},
                            &list_);
      }
      if (rows()[i].height >= options_.chart_row_px && !rows()[i].gpu &&
          rows()[i].kind == MareyRowKind::kDevice) {
        // The line charts sit above the axis, over the bands' tops.
        const MareyTrack* track = (*frame_->tracks)[i];
        const float band = BandHalf(i);
        charts.Add(rows()[i].rank, view_.raw && track != nullptr ? track->raw_base : 0,
                   rows()[i].axis_y - band - 3, std::max(4.0f, rows()[i].height * 0.4f - band - 6),
                   &list_);
      }
    }
    AddLinkJoins();
  }

  // Row labels (every k-th when rows are thin), alert crosses, pixel map.
  const int label_every = std::max(1, static_cast<int>(std::ceil(13.0f / pitch_)));
  for (size_t i = 0; i < n; ++i) {
    const MareyRow& row = rows()[i];
    const bool group_head = row.kind == MareyRowKind::kGroupMin;
    if (static_cast<int>(i) % label_every == 0 || group_head) {
      const bool is_group = row.kind != MareyRowKind::kDevice;
      const bool selected = row_in(i, frame_->selected_ranks);
      Text label{
          view_.plot.x - 20,   row.axis_y,
          row.label,           is_group ? Rgba(25, 60, 140) : selected ? kSelectColor : kTextColor,
          Text::Align::kRight, group_head || selected};
      if (!is_group && !row.group_key.empty()) label.x -= 10;
      list_.texts.push_back(label);
    }
    if (row.has_alert) {
      list_.crosses.push_back({{view_.plot.x - 9, row.axis_y},
                               std::clamp(row.height * 0.45f, 3.0f, 6.0f),
                               kAlertColor,
                               row.height < 6 ? 1.5f : 2.5f});
    }
  }
  MareyPixelMap::Add(view_, rows(), frame_->step_values, &list_);

  MareyAxes::AddLegend(view_, &list_);
  stats_.rows = n;
  frame_ = nullptr;
}

void MareyLayout::LayoutDenseRows() {
  EnsureImage();
  const size_t n = rows().size();
  const int image_width = list_.image.width;
  const int image_height = list_.image.height;
  // A row's pixel rows [y0, y1): its share of the plot, with a 1 px gap
  // between rows when there is room for one; always the pixel row of its
  // axis (hit tests, labels).
  auto pixel_rows = [&](size_t i) {
    const MareyRow& row = rows()[i];
    const float top = row.top - view_.plot.y;
    const float centre = top + row.height / 2;
    int y0 = static_cast<int>(top);
    int y1 = static_cast<int>(top + row.height);
    if (row.height >= 3) {
      const float half = (row.height - 1) / 2;
      y0 = static_cast<int>(std::ceil(centre - half - 0.5f));
      y1 = static_cast<int>(std::floor(centre + half - 0.5f)) + 1;
    }
    y0 = std::min(y0, static_cast<int>(centre));
    y1 = std::min(std::max(y1, static_cast<int>(centre) + 1), image_height);
    return std::pair<int, int>(y0, y1);
  };
  auto lay_out = [&](size_t from, size_t to, FrameStats* stats) {
    std::vector<Color> line(static_cast<size_t>(image_width));
    RowLayout unused;
    for (size_t i = from; i < to; ++i) {
      std::fill(line.begin(), line.end(), 0);
      LayoutRow(i, &unused, &line, stats);
      const auto [y0, y1] = pixel_rows(i);
      for (int y = y0; y < y1; ++y) {
        std::copy(line.begin(), line.end(),
                  list_.image.pixels.begin() + static_cast<size_t>(y) * image_width);
      }
    }
  };
  // Thousands of rows are independent: split them over the cores. Rows
  // thinner than a pixel share pixel rows, where the later row wins; a
  // chunk boundary moves until the rows on its two sides share none, so
  // the picture is the sequential one.
  const size_t wanted =
      options_.layout_threads > 0 ? options_.layout_threads : std::thread::hardware_concurrency();
  const size_t workers = n < 64 ? 1 : std::clamp<size_t>(wanted, 1, kMaxLayoutThreads);
  std::vector<size_t> bounds{0};
  for (size_t w = 1; w < workers; ++w) {
    size_t b = std::max(n * w / workers, bounds.back());
    while (b > 0 && b < n && pixel_rows(b - 1).second > pixel_rows(b).first) ++b;
    bounds.push_back(b);
  }
  bounds.push_back(n);
  std::vector<FrameStats> parts(workers);
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) {
    threads.emplace_back(lay_out, bounds[w], bounds[w + 1], &parts[w]);
  }
  lay_out(bounds[0], bounds[1], &parts[0]);
  for (std::thread& t : threads) t.join();
  for (const FrameStats& part : parts) {
    stats_.individual_operators += part.individual_operators;
    stats_.merged_bins += part.merged_bins;
  }
}

void MareyLayout::EnsureImage() {
  if (!list_.image.pixels.empty()) return;
  const int width = std::max(1, static_cast<int>(view_.plot.w));
  const int height = std::max(1, static_cast<int>(view_.plot.h));
  list_.image.dest = {view_.plot.x, view_.plot.y, static_cast<float>(width),
                      static_cast<float>(height)};
  list_.image.width = width;
  list_.image.height = height;
  list_.image.pixels.assign(static_cast<size_t>(width) * height, 0);
}

void MareyLayout::LayoutRow(size_t index, RowLayout* layout, std::vector<Color>* line,
                            FrameStats* stats) {
  const MareyTrack* track = (*frame_->tracks)[index];
  if (track == nullptr) return;
  const float axis_y = rows()[index].axis_y;
  const float band_half = BandHalf(index);
  const int64_t t0 = view_.start;
  const int64_t t1 = view_.end;
  const uint32_t bins = options_.bins;
  const double bin_ns = static_cast<double>(t1 - t0) / bins;
  const float bin_px = view_.plot.w / static_cast<float>(bins);
  const double px_per_ns = view_.plot.w / static_cast<double>(t1 - t0);
  const float right = view_.plot.x + view_.plot.w;
  const bool raw = view_.raw;
  const int64_t base = raw ? track->raw_base : 0;
  const int64_t raw_slack = raw ? 1'000'000 : 0;  // raw deltas may reorder slightly
  const bool focused_row = rows()[index].kind == MareyRowKind::kDevice && frame_->focus_name != 0 &&
                           std::binary_search(frame_->focus_ranks.begin(),
                                              frame_->focus_ranks.end(), rows()[index].rank);
  // The other end of the selected link when this row is one of its ends.
  int64_t link_peer = -1;
  if (const auto& link = frame_->selected_link;
      link.has_value() && rows()[index].kind == MareyRowKind::kDevice) {
    if (rows()[index].rank == link->first) link_peer = link->second;
    if (rows()[index].rank == link->second) link_peer = link->first;
  }

  auto start_of = [&](const MareyTrack::Op& op) { return track->StartOf(op, raw); };
  auto end_of = [&](const MareyTrack::Op& op) { return track->EndOf(op, raw); };
  auto to_x = [&](int64_t t) {
    return view_.plot.x + static_cast<float>(static_cast<double>(t - t0) * px_per_ns);
  };
  auto first_at_or_after = [&](const std::vector<MareyTrack::Op>& ops, size_t from, int64_t t) {
    return static_cast<size_t>(
        std::partition_point(ops.begin() + static_cast<std::ptrdiff_t>(from), ops.end(),
                             [&](const MareyTrack::Op& op) { return start_of(op) < t; }) -
        ops.begin());
  };
  // The next edge is usually near the previous one: gallop from it so the
  // probes stay in cache lines already loaded (frames are memory-bound).
  auto gallop = [&](const std::vector<MareyTrack::Op>& ops, size_t from, int64_t t) {
    size_t low = from, high = from, step = 1;
    while (high < ops.size() && start_of(ops[high]) < t) {
      low = high + 1;
      high += step;
      step *= 2;
    }
    high = std::min(high, ops.size());
    return static_cast<size_t>(
        std::partition_point(ops.begin() + static_cast<std::ptrdiff_t>(low),
                             ops.begin() + static_cast<std::ptrdiff_t>(high),
                             [&](const MareyTrack::Op& op) { return start_of(op) < t; }) -
        ops.begin());
  };

  // Density bins over the compute operators (prefix counts: no scan). Zoomed
  // out, the bin edges come from the track's coarse index, rounded to its
  // grid (at most 1/8 of a bin): no operator is touched.
  const std::vector<MareyTrack::Op>& compute = track->compute;
  std::vector<size_t> edges(bins + 1);
  const bool coarse = !raw && track->fine_ns > 0 && bin_ns >= 4.0 * track->fine_ns;
  std::vector<const MareyTrack::FineEdge*> fine_edges;
  if (coarse) {
    fine_edges.resize(bins + 1);
    fine_edges[0] = &track->FineAt(t0 - track->max_compute);
    for (uint32_t k = 1; k < bins; ++k) {
      fine_edges[k] = &track->FineAt(t0 + static_cast<int64_t>(bin_ns * k));
    }
    fine_edges[bins] = &track->FineAt(t1);
    for (uint32_t k = 0; k <= bins; ++k) edges[k] = fine_edges[k]->index;
  } else {
    edges[0] = first_at_or_after(compute, 0, t0 - track->max_compute - raw_slack);
    for (uint32_t k = 1; k < bins; ++k) {
      edges[k] = gallop(compute, edges[k - 1], t0 + static_cast<int64_t>(bin_ns * k));
    }
    edges[bins] = gallop(compute, edges[bins - 1], t1);
  }
  const double mean = static_cast<double>(edges[bins] - edges[0]) / bins;
  const double lod_limit = bin_px / options_.min_band_px;
  std::vector<uint8_t>& merged_flags = row_merged_[index];
  size_t sparse = 0;
  for (uint32_t k = 0; k < bins; ++k) {
    const size_t count = edges[k + 1] - edges[k];
    merged_flags[k] =
        count >= 2 && (static_cast<double>(count) > mean || static_cast<double>(count) > lod_limit);
    if (!merged_flags[k]) sparse += count;
  }
  const std::vector<MareyTrack::Op>& comm = track->comm;
  // A view that holds the whole track (zoomed out) needs no search.
  const int64_t comm_low = t0 - track->max_comm - raw_slack;
  const int64_t comm_high = t1 + 1 + raw_slack;
  const size_t comm_from =
      comm.empty() || start_of(comm.front()) >= comm_low ? 0 : first_at_or_after(comm, 0, comm_low);
  const size_t comm_to = !comm.empty() && start_of(comm.back()) < comm_high
                             ? comm.size()
                             : gallop(comm, comm_from, comm_high);

  // Communication is merged only where its operators would be narrower
  // than `min_band_px` (a whole run in view): each such bin becomes one bar
  // whose height is the bin's share of time in communication (Wei et al.'s
  // aggregation), so thousands of collectives read as a level instead of one
  // solid yellow band, and cost one rectangle. Zoomed in, every collective
  // is drawn and joined. Dense rows are rasterised one pixel per column and
  // need no merging.
  std::vector<size_t> comm_edges;
  std::vector<uint8_t> comm_merged;
  size_t comm_shown = comm_to - comm_from;
  if (line == nullptr && comm_to > comm_from) {
    comm_edges.resize(bins + 1);
    comm_edges[0] = comm_from;
    for (uint32_t k = 1; k < bins; ++k) {
      comm_edges[k] =
          std::min(comm_to, gallop(comm, comm_edges[k - 1], t0 + static_cast<int64_t>(bin_ns * k)));
    }
    comm_edges[bins] = comm_to;
    comm_merged.assign(bins, 0);
    for (uint32_t k = 0; k < bins; ++k) {
      const size_t count = comm_edges[k + 1] - comm_edges[k];
      if (count >= 2 && static_cast<double>(count) > lod_limit) {
        comm_merged[k] = 1;
        comm_shown -= count;
      }
    }
  }

  // A row with more operators than a third of its pixels is rasterised (one
  // colour per column) instead of becoming thousands of rectangles.
  std::vector<Color> local;
  std::vector<Color>* pixels = line;
  const bool heavy = line == nullptr && static_cast<float>(sparse + comm_shown) > view_.plot.w / 3;
  if (heavy) {
    EnsureImage();
    local.assign(static_cast<size_t>(list_.image.width), 0);
    pixels = &local;
  }
  const int width = pixels != nullptr ? static_cast<int>(pixels->size()) : 0;
  auto fill = [&](float x0, float x1, Color color) {
    int a = static_cast<int>(x0 - view_.plot.x);
    int b = static_cast<int>(std::ceil(x1 - view_.plot.x));
    a = std::clamp(a, 0, width);
    b = std::clamp(std::max(b, a + 1), 0, width);
    std::fill(pixels->begin() + a, pixels->begin() + b, color);
  };
  float last_x1[kOpClassCount];
  std::fill(std::begin(last_x1), std::end(last_x1), -1e9f);
  auto draw_op = [&](const MareyTrack::Op& op) {
    const int64_t s = start_of(op);
    const int64_t e = end_of(op);
    if (e < t0 || s > t1) return;
    const float x0 = std::max(view_.plot.x, to_x(s));
    const float x1 = std::min(right, to_x(e));
    const int c = static_cast<int>(op.cls);
    // Entirely inside pixels already painted in this class: nothing to add.
    if (std::ceil(x1) <= last_x1[c] && x0 >= last_x1[c] - 1) return;
    const float w = std::max(1.0f, x1 - x0);
    last_x1[c] = std::max(last_x1[c], std::ceil(x0 + w));
    ++stats->individual_operators;
    if (pixels != nullptr) {
      fill(x0, x0 + w, ClassColor(op.cls));
    } else {
      list_.rects.push_back({{x0, axis_y - band_half, w, 2 * band_half}, ClassColor(op.cls)});
    }
    if (line != nullptr) return;  // dense rows: no joins, no outlines
    if (focused_row && op.name == frame_->focus_name &&
        (!frame_->focus_step || op.step == *frame_->focus_step)) {
      list_.overlay_rects.push_back(
          {{x0 - 2, axis_y - band_half - 2, w + 4, 2 * band_half + 4}, 0, kAlertColor});
    }
    if (link_peer >= 0 && (op.cls == OpClass::kSend || op.cls == OpClass::kRecv) &&
        op.peer() == link_peer) {
      list_.overlay_rects.push_back(
          {{x0 - 2, axis_y - band_half - 2, w + 4, 2 * band_half + 4}, 0, kSelectColor});
      link_ends_.push_back({op.key, op.cls == OpClass::kSend, x0, x0 + w, axis_y});
    }
    // Joins of sub-pixel operators would be noise: only visible ones join.
    if (!heavy || w >= 1.5f) layout->items.push_back({op.key, x0, x0 + w, op.cls});
  };

  if (line == nullptr) layout->merged.assign(bins, {0.0f, -1.0f});
  for (uint32_t k = 0; k < bins; ++k) {
    const size_t count = edges[k + 1] - edges[k];
    if (count == 0) continue;
    if (!merged_flags[k]) {
      for (size_t j = edges[k]; j < edges[k + 1]; ++j) draw_op(compute[j]);
      continue;
    }
    ++stats->merged_bins;
    const int64_t first_start = coarse ? fine_edges[k]->next_start : start_of(compute[edges[k]]);
    const int64_t last_end =
        coarse ? fine_edges[k + 1]->prev_end : end_of(compute[edges[k + 1] - 1]);
    const int64_t s = std::max(t0, first_start);
    const int64_t e = std::min(t1, last_end);
    const float x0 = std::max(view_.plot.x, to_x(s));
    const float x1 = std::max(x0 + 1, to_x(e));
    const double busy = static_cast<double>(coarse ? fine_edges[k + 1]->busy - fine_edges[k]->busy
                                                   : track->busy_prefix[edges[k + 1]] -
                                                         track->busy_prefix[edges[k]]);
    const double fraction = std::clamp(busy / std::max(1.0, bin_ns), 0.0, 1.0);
    const int merged_class = static_cast<int>(track->gpu ? OpClass::kGpuKernel : OpClass::kCompute);
    last_x1[merged_class] = std::max(last_x1[merged_class], std::ceil(x1));
    if (pixels != nullptr) {
      fill(x0, x1, MareyPalette::Lerp(Rgba(200, 230, 201), kMergedColor, 0.4 + 0.6 * fraction));
    } else {
      list_.rects.push_back({{x0, axis_y - band_half, x1 - x0, 2 * band_half},
                             WithAlpha(kMergedColor, static_cast<uint32_t>(120 + 135 * fraction)),
                             WithAlpha(Rgba(27, 94, 32), 200)});
    }
    if (line == nullptr) layout->merged[k] = {x0, x1};
  }

  // Communication: never merged. When rasterising, a block of operators
  // that lies within fewer pixels than it has operators covers every pixel
  // of its span anyway, so it is painted in one go.
  constexpr size_t kBlock = MareyTrack::kBlock;
  if (line != nullptr && !raw) {
    // Dense rows (no joins, no outlines, aligned clock): a tight loop that
    // paints each operator's pixel columns; thousands of rows make this the
    // frame's inner loop.
    Color* out = pixels->data();
    const MareyTrack::Span* spans = track->comm_spans.data();
    Color colors[kOpClassCount];
    for (int c = 0; c < kOpClassCount; ++c) colors[c] = ClassColor(static_cast<OpClass>(c));
    size_t drawn = 0;  // a local: the pixel stores could alias a member
    for (size_t j = comm_from; j < comm_to; ++j) {
      const MareyTrack::Span& op = spans[j];
      const int64_t end = op.start + op.duration;
      if (end < t0 || op.start > t1) continue;
      const int a = std::clamp(static_cast<int>(static_cast<double>(op.start - t0) * px_per_ns), 0,
                               width - 1);
      const int b = std::clamp(
          static_cast<int>(std::ceil(static_cast<double>(end - t0) * px_per_ns)), a + 1, width);
      const Color color = colors[static_cast<int>(op.cls)];
      for (int x = a; x < b; ++x) out[x] = color;
      ++drawn;
    }
    stats->individual_operators += drawn;
    return;
  }
  // Merged communication bins: a bar from the band's foot, as tall as the
  // bin's share of time in communication.
  for (size_t k = 0; k < comm_merged.size(); ++k) {
    if (!comm_merged[k]) continue;
    ++stats->merged_comm_bins;
    const size_t a = comm_edges[k], b = comm_edges[k + 1];
    const double busy =
        static_cast<double>(track->comm_busy_prefix[b] - track->comm_busy_prefix[a]);
    const double fraction = std::clamp(busy / std::max(1.0, bin_ns), 0.0, 1.0);
    const float x0 = std::max(view_.plot.x, view_.plot.x + bin_px * static_cast<float>(k));
    const float x1 = std::min(right, x0 + bin_px);
    const float h = std::max(1.0f, 2 * band_half * static_cast<float>(fraction));
    const Color color = ClassColor(comm[a].cls);
    if (pixels != nullptr) {
      fill(x0, x1, color);
    } else {
      list_.rects.push_back({{x0, axis_y + band_half - h, x1 - x0, h}, color});
    }
  }
  const size_t comm_bins = comm_merged.size();
  for (size_t j = comm_from; j < comm_to;) {
    if (comm_bins > 0) {
      // Skip the operators of merged bins (drawn above as one bar each).
      const size_t k =
          static_cast<size_t>(std::upper_bound(comm_edges.begin(), comm_edges.end(), j) -
                              comm_edges.begin()) -
          1;
      if (k < comm_bins && comm_merged[k]) {
        j = comm_edges[k + 1];
        continue;
      }
    }
    if (pixels != nullptr && j % kBlock == 0 && j + kBlock <= comm_to) {
      const size_t block = j / kBlock;
      const int64_t s = track->block_start[block] + (raw ? base + track->block_raw_low[block] : 0);
      const int64_t e = track->block_end[block] + (raw ? base + track->block_raw_high[block] : 0);
      if (static_cast<double>(e - s) * px_per_ns <= static_cast<double>(kBlock) && e >= t0 &&
          s <= t1) {
        fill(std::max(view_.plot.x, to_x(s)), std::min(right, to_x(e)),
             ClassColor(track->block_class[block]));
        ++stats->individual_operators;
        j += kBlock;
        continue;
      }
    }
    draw_op(comm[j]);
    ++j;
  }

  if (heavy) {
    // The band's pixel rows around the axis.
    const int y0 = std::max(0, static_cast<int>(axis_y - band_half - view_.plot.y));
    const int y1 = std::min(list_.image.height,
                            static_cast<int>(std::ceil(axis_y + band_half - view_.plot.y)));
    for (int y = y0; y < y1; ++y) {
      std::copy(local.begin(), local.end(),
                list_.image.pixels.begin() + static_cast<size_t>(y) * list_.image.width);
    }
  }
}

void MareyLayout::AddLinkJoins() {
  // A send and its receive share a key (MareyTrack::Add): sorted by key, a
  // pair is two neighbours.
  std::sort(link_ends_.begin(), link_ends_.end(), [](const LinkEnd& a, const LinkEnd& b) {
    return a.key != b.key ? a.key < b.key : a.send > b.send;
  });
  for (size_t i = 0; i + 1 < link_ends_.size(); ++i) {
    const LinkEnd& send = link_ends_[i];
    const LinkEnd& recv = link_ends_[i + 1];
    if (send.key != recv.key || !send.send || recv.send) continue;
    // From the send's start to the receive's end: the transfer as the
    // analysis measures it.
    list_.lines.push_back({{send.x0, send.y}, {recv.x1, recv.y}, kSelectColor, 2});
    ++stats_.link_transfers;
    ++i;
  }
}

float MareyLayout::BandHalf(size_t index) const {
  return std::clamp(rows()[index].height * 0.16f, 1.0f, 5.0f);
}

bool MareyLayout::SameDevice(size_t a, size_t b) const {
  const MareyRow& x = rows()[a];
  const MareyRow& y = rows()[b];
  return x.kind == MareyRowKind::kDevice && y.kind == MareyRowKind::kDevice && x.rank == y.rank;
}

size_t MareyLayout::RowAt(float y) const {
  if (row_tops_.empty()) return 0;
  const auto it = std::upper_bound(row_tops_.begin(), row_tops_.end(), y);
  return it == row_tops_.begin() ? 0 : static_cast<size_t>(it - row_tops_.begin()) - 1;
}

}  // namespace trainscope::viewer
