#include "trainscope/viewer/overview_bars_layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "trainscope/viewer/overview_palette.h"
#include "trainscope/viewer/units.h"

namespace trainscope::viewer {

void OverviewBarsLayout::Lay(const StepRecord& step, const RectF& area, DrawList* list) {
  bars_.clear();
  kernels_.clear();
  area_ = area;
  const float title_y = area_.y - 24;
  list->texts.push_back({12, title_y,
                         "Step " + std::to_string(step.step) + ": time per device  (" +
                             FormatDuration(static_cast<double>(step.end_ns - step.start_ns)) +
                             " end to end)",
                         kTextColor, Text::Align::kLeft, true, 10});
  const bool gpu = std::any_of(step.devices.begin(), step.devices.end(),
                               [](const DeviceStepRecord& d) { return d.has_gpu; });
  float x = 430;
  const float legend_y = title_y;
  if (gpu) {
    // Two legend lines: the device-time segments do not fit on one.
    x = 12;
    const float y = title_y + 17;
    const std::pair<Color, const char*> legend[] = {
        {OverviewPalette::kGpuComputeColor, "GPU compute"},
        {OverviewPalette::kNcclWaitColor, "NCCL wait"},
        {OverviewPalette::kNcclTransferColor, "NCCL transfer"},
        {OverviewPalette::kCopyColor, "copies"},
        {OverviewPalette::kLaunchBoundColor, "idle: launch-bound"},
        {OverviewPalette::kHostSyncColor, "idle: host sync"},
        {OverviewPalette::kGpuDataWaitColor, "idle: data wait"},
        {OverviewPalette::kGpuIdleColor, "idle: other"}};
    for (const auto& [color, label] : legend) {
      x += OverviewPalette::AddSwatch(list, x, y, color, label) - 2;
    }
    // The kernel table takes the right part of the bars' area.
    const float table_w = std::min(430.0f, area_.w * 0.45f);
    const RectF table = {area_.x + area_.w - table_w, area_.y + 12, table_w, area_.h - 12};
    area_.w -= table_w + 16;
    area_.y += 12;
    area_.h -= 12;
    LayTopKernels(step, table, list);
  } else {
    x +=
        OverviewPalette::AddSwatch(list, x, legend_y, OverviewPalette::kIntervalColor, "data wait");
    x += OverviewPalette::AddSwatch(list, x, legend_y, OverviewPalette::kForwardBackwardColor,
                                    "compute");
    x += OverviewPalette::AddSwatch(list, x, legend_y, OverviewPalette::kWaitColor, "comm wait");
    x +=
        OverviewPalette::AddSwatch(list, x, legend_y, OverviewPalette::kCommColor, "comm transfer");
    OverviewPalette::AddSwatch(list, x, legend_y, OverviewPalette::kTailColor, "idle");
  }

  list->backgrounds.push_back({area_, Rgba(250, 250, 252), WithAlpha(kAxisColor, 120)});
  if (step.devices.empty()) return;
  int64_t max_time = 1;
  for (const auto& d : step.devices) max_time = std::max(max_time, d.step_time_ns);
  const double top = scale_.Fit(static_cast<double>(max_time) * 1.08);
  // A label needs about 16 px: a short area (a small window) gets fewer
  // ticks instead of labels drawn over each other.
  const std::vector<double> ticks =
      NiceTicks(0, top, std::clamp(static_cast<int>(area_.h / 16) - 1, 2, 5));
  auto y_of = [&](double ns) { return area_.y + area_.h - static_cast<float>(ns / top) * area_.h; };
  auto height_of = [&](double ns) { return static_cast<float>(ns / top) * area_.h; };
  for (double tick : ticks) {
    const float y = y_of(tick);
    list->lines.push_back({{area_.x, y}, {area_.x + area_.w, y}, kGridColor, 1});
    list->texts.push_back({area_.x - 6, y, FormatDuration(tick), kTextColor, Text::Align::kRight});
  }
  list->texts.push_back({16, area_.y + area_.h / 2, "time in step", kTextColor,
                         Text::Align::kCenter, false, 0, true});
  const float slot = area_.w / static_cast<float>(step.devices.size());
  const float bar_width = std::max(1.0f, slot * 0.72f);
  const int label_every = std::max(1, static_cast<int>(std::ceil(34.0f / slot)));
  const float base = area_.y + area_.h;
  for (size_t i = 0; i < step.devices.size(); ++i) {
    const DeviceStepRecord& d = step.devices[i];
    DeviceBar bar;
    bar.rank = d.rank;
    bar.step_time_ns = std::max<int64_t>(0, d.step_time_ns);
    bar.selected = selected_.count(d.rank) != 0;
    const float x0 = area_.x + slot * static_cast<float>(i) + (slot - bar_width) / 2;
    // Behind the bar (pushed first): the selected device's slot.
    if (bar.selected) {
      list->rects.push_back({{area_.x + slot * static_cast<float>(i), area_.y, slot, area_.h},
                             kSelectTintColor,
                             kSelectColor});
    }
    auto label = [&](float y) {
      if (static_cast<int>(i) % label_every != 0 && !bar.selected) return;
      list->texts.push_back({x0 + bar_width / 2, y, "rank " + std::to_string(d.rank),
                             bar.selected ? kSelectColor : kTextColor, Text::Align::kCenter,
                             bar.selected});
    };
    if (d.has_gpu) {
      // Device time, bottom to top; each piece clamped to what is left so
      // overlaps (NCCL under compute, copies under kernels) never overshoot.
      bar.gpu = true;
      int64_t left = bar.step_time_ns;
      float y = base;
      auto stack = [&](const char* label, int64_t ns, Color color) {
        Segment segment{label, std::clamp<int64_t>(ns, 0, left), color, {}};
        left -= segment.ns;
        const float h = height_of(static_cast<double>(segment.ns));
        segment.rect = {x0, y - h, bar_width, h};
        y -= h;
        if (h > 0) list->rects.push_back({segment.rect, color});
        bar.segments.push_back(segment);
      };
      stack("GPU compute", d.gpu_busy_ns, OverviewPalette::kGpuComputeColor);
      stack("NCCL wait", d.wait_ns, OverviewPalette::kNcclWaitColor);
      stack("NCCL transfer", d.transfer_ns - d.comm_compute_overlap_ns,
            OverviewPalette::kNcclTransferColor);
      stack("copies", d.copy_ns(), OverviewPalette::kCopyColor);
      stack("idle: launch-bound", d.gpu_idle_launch_bound_ns, OverviewPalette::kLaunchBoundColor);
      stack("idle: host sync", d.gpu_idle_host_sync_ns, OverviewPalette::kHostSyncColor);
      stack("idle: data wait", d.gpu_idle_data_wait_ns, OverviewPalette::kGpuDataWaitColor);
      stack("idle: other", left, OverviewPalette::kGpuIdleColor);
      bar.compute_ns = bar.segments[0].ns;
      bar.comm_ns = std::clamp<int64_t>(d.collective_ns, 0, bar.step_time_ns);
      bar.wait_ns = bar.segments[1].ns;
      bar.compute_rect = bar.segments[0].rect;
      bar.interval_rect = {x0, y, bar_width, base - y};  // the whole column, for hovering
      label(base + 13);
      bars_.push_back(std::move(bar));
      continue;
    }
    // What the analysis measured, stacked: data wait, compute, waiting in
    // collectives, transferring, idle (the rest). Each piece is clamped to
    // what the step has left, so rounding never makes a bar overshoot. A
    // straggler's extra time is compute or idle, the others' is wait: the
    // whole step drawn as "compute" hid exactly that.
    int64_t left = bar.step_time_ns;
    auto take = [&left](int64_t ns) {
      const int64_t taken = std::clamp<int64_t>(ns, 0, left);
      left -= taken;
      return taken;
    };
    const int64_t compute = d.compute_ns > 0 ? d.compute_ns : d.forward_ns + d.backward_ns;
    const int64_t transfer =
        d.transfer_ns > 0 ? d.transfer_ns : std::max<int64_t>(0, d.collective_ns - d.wait_ns);
    bar.interval_ns = take(d.data_wait_ns);
    bar.compute_ns = take(compute);
    bar.wait_ns = take(d.wait_ns);
    const int64_t transfer_ns = take(transfer);
    bar.comm_ns = bar.wait_ns + transfer_ns;
    bar.tail_ns = left;  // idle: neither computing nor communicating
    float y = base;
    auto stack = [&](int64_t ns, RectF* rect, Color color) {
      const float h = height_of(static_cast<double>(ns));
      *rect = {x0, y - h, bar_width, h};
      y -= h;
      if (h > 0) list->rects.push_back({*rect, color});
    };
    stack(bar.interval_ns, &bar.interval_rect, OverviewPalette::kIntervalColor);
    stack(bar.compute_ns, &bar.compute_rect, OverviewPalette::kForwardBackwardColor);
    stack(bar.wait_ns, &bar.wait_rect, OverviewPalette::kWaitColor);
    stack(transfer_ns, &bar.comm_rect, OverviewPalette::kCommColor);
    stack(bar.tail_ns, &bar.tail_rect, OverviewPalette::kTailColor);
    bar.segments = {
        {"data wait", bar.interval_ns, OverviewPalette::kIntervalColor, bar.interval_rect},
        {"compute", bar.compute_ns, OverviewPalette::kForwardBackwardColor, bar.compute_rect},
        {"comm wait", bar.wait_ns, OverviewPalette::kWaitColor, bar.wait_rect},
        {"comm transfer", transfer_ns, OverviewPalette::kCommColor, bar.comm_rect},
        {"idle", bar.tail_ns, OverviewPalette::kTailColor, bar.tail_rect}};
    // The rank's colour (the lines above) under its bar: the key.
    list->rects.push_back({{x0, base + 2, bar_width, 3}, OverviewPalette::Rank(d.rank)});
    label(base + 15);
    bars_.push_back(bar);
  }
}

void OverviewBarsLayout::LayTopKernels(const StepRecord& step, const RectF& area, DrawList* list) {
  struct Sum {
    KernelRow row;
    int64_t best_share = -1;
  };
  std::map<std::string, Sum> by_name;
  for (const DeviceStepRecord& d : step.devices) {
    for (const KernelSummaryRecord& k : d.top_kernels) {
      Sum& sum = by_name[k.name];
      sum.row.name = k.name;
      sum.row.op_class = k.op_class;
      sum.row.count += k.count;
      sum.row.total_ns += k.total_ns;
      if (k.total_ns > sum.best_share) {
        sum.best_share = k.total_ns;
        sum.row.launch_op = k.launch_op;
      }
    }
  }
  for (auto& [name, sum] : by_name) kernels_.push_back(std::move(sum.row));
  std::sort(kernels_.begin(), kernels_.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (kernels_.size() > kMaxKernelRows) kernels_.resize(kMaxKernelRows);

  list->backgrounds.push_back({area, Rgba(250, 250, 252), WithAlpha(kAxisColor, 120)});
  float y = area.y + 14;
  list->texts.push_back({area.x + 8, y,
                         "Top kernels of step " + std::to_string(step.step) + " (all devices)",
                         kTextColor, Text::Align::kLeft, true});
  const float name_x = area.x + 22;
  const float total_x = area.x + area.w - 8;
  const float count_x = total_x - 70;
  // The column names only where they leave room for two kernels (a short
  // overview shows the kernels, not a header over nothing).
  if (area.h >= 18 + 18 + 2 * 14 + 6) {
    y += 18;
    list->texts.push_back({name_x, y, "kernel (launched by)", kAxisColor, Text::Align::kLeft});
    list->texts.push_back({count_x, y, "count", kAxisColor, Text::Align::kRight});
    list->texts.push_back({total_x, y, "total", kAxisColor, Text::Align::kRight});
  }
  if (kernels_.empty()) {
    list->texts.push_back({name_x, y + 18, "no kernel summaries in this step", kAxisColor});
    return;
  }
  const float row_h = std::clamp((area.y + area.h - y - 6) / kMaxKernelRows, 12.0f, 20.0f);
  // Characters that fit between the name's start and the count column.
  const size_t fit = static_cast<size_t>(std::max(8.0f, (count_x - 48 - name_x) / 6.2f));
  for (const KernelRow& k : kernels_) {
    y += row_h;
    if (y > area.y + area.h - 4) break;
    const Color swatch = k.op_class == OpClass::kGpuCollective ? OverviewPalette::kNcclTransferColor
                         : k.op_class == OpClass::kGpuCopy     ? OverviewPalette::kCopyColor
                                                               : OverviewPalette::kGpuComputeColor;
    list->rects.push_back({{area.x + 8, y - 4, 8, 8}, swatch});
    std::string name = ShortKernelName(k.name);
    if (!k.launch_op.empty()) name += "  (" + k.launch_op + ")";
    if (name.size() > fit) name = name.substr(0, fit - 1) + "\xE2\x80\xA6";
    list->texts.push_back({name_x, y, name, kTextColor, Text::Align::kLeft});
    list->texts.push_back({count_x, y, std::to_string(k.count), kTextColor, Text::Align::kRight});
    list->texts.push_back({total_x, y, FormatDuration(static_cast<double>(k.total_ns)), kTextColor,
                           Text::Align::kRight});
  }
}

std::string OverviewBarsLayout::TooltipAt(float x, float y) const {
  for (const DeviceBar& bar : bars_) {
    const RectF column = {bar.interval_rect.x, area_.y, bar.interval_rect.w, area_.h};
    if (!column.Contains(x, y)) continue;
    std::string text = "rank " + std::to_string(bar.rank) + (bar.gpu ? " (device time)" : "") +
                       "\nstep time: " + FormatDuration(bar.step_time_ns);
    for (const Segment& segment : bar.segments) {
      text += "\n" + segment.label + ": " + FormatDuration(static_cast<double>(segment.ns));
    }
    return text;
  }
  return {};
}

}  // namespace trainscope::viewer
