#include "trainscope/viewer/marey_hit_tester.h"

#include <algorithm>
#include <cmath>

#include "trainscope/viewer/units.h"

namespace trainscope::viewer {

std::string MareyHitTester::DescribeRowAlerts(const Scene& scene, size_t index) {
  const auto& rows = *scene.rows;
  const auto& groups = *scene.groups;
  const MareyTrackStore& store = *scene.store;
  std::vector<uint32_t> ranks;
  const MareyRow& row = rows[index];
  if (row.kind == MareyRowKind::kDevice) {
    ranks.push_back(row.rank);
  } else if (auto group = groups.find(row.group_key); group != groups.end()) {
    ranks = group->second->ranks;
  }
  std::string text;
  for (uint32_t rank : ranks) {
    auto it = store.alerts_by_rank().find(rank);
    if (it == store.alerts_by_rank().end()) continue;
    for (const Alert* alert : it->second) {
      if (!text.empty()) text += "\n";
      text += "step " + std::to_string(alert->step) + ", rank " + std::to_string(rank) + ": " +
              (alert->text.empty() ? alert->rule : alert->text);
    }
  }
  return text;
}

std::optional<MareyHitTester::Hit> MareyHitTester::HitTest(const Scene& scene, float x, float y) {
  const std::vector<MareyRow>& rows = *scene.rows;
  const auto& groups = *scene.groups;
  const MareyTrackStore& store = *scene.store;
  const MareyView& view = *scene.view;
  const MareyLayout& layout = *scene.layout;
  if (rows.empty() || y < view.plot.y || y >= view.plot.y + view.plot.h) return std::nullopt;
  const size_t index = layout.RowAt(y);
  const MareyRow& row = rows[index];
  Hit hit;
  hit.row = index;
  hit.row_label = row.label;
  hit.group_key = row.group_key;
  const float map_x = view.PixelMapX(0);
  if (x >= map_x && x < map_x + 3 * MareyView::kPixelMapColumn) {
    hit.kind = Hit::Kind::kPixelMap;
    const auto& devices = (*scene.step_values)[index];
    if (devices.empty()) return std::nullopt;
    double flops = 0, rate = 0, memory = 0;
    for (const auto* d : devices) {
      flops += static_cast<double>(d->flops);
      rate += d->flops_per_second;
      memory = std::max(memory, static_cast<double>(d->peak_memory_bytes));
    }
    const double count = static_cast<double>(devices.size());
    hit.text = row.label + (devices.size() > 1 ? " (mean over devices)" : "") +
               "\nFLOPs: " + FormatFlops(flops / count, false) +
               "\nFLOP/s: " + FormatFlops(rate / count, true) +
               "\npeak memory: " + FormatBytes(memory);
    return hit;
  }
  if (row.has_alert && std::fabs(x - (view.plot.x - 9)) <= 8) {
    hit.kind = Hit::Kind::kAlert;
    hit.text = DescribeRowAlerts(scene, index);
    return hit;
  }
  if (x < view.plot.x - 2) {
    hit.kind = Hit::Kind::kRowLabel;
    if (!row.group_key.empty() && row.kind != MareyRowKind::kDevice) {
      auto group = groups.find(row.group_key);
      std::string ranks;
      if (group != groups.end()) {
        for (uint32_t r : group->second->ranks) {
          ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      hit.text = row.group_key + ": ranks " + ranks + "\nclick to " +
                 (row.expanded ? "collapse" : "expand");
    } else {
      const DeviceInfo& info = store.info(row.rank);
      hit.text = row.label + "\nstage " + std::to_string(info.stage) +
                 (info.host.empty() ? "" : ", host " + info.host);
    }
    return hit;
  }
  if (x < view.plot.x || x > view.plot.x + view.plot.w) return std::nullopt;
  const MareyTrack* track = index < scene.tracks->size() ? (*scene.tracks)[index] : nullptr;
  if (track == nullptr) return std::nullopt;
  const int64_t t = view.XToTime(x);
  const int64_t tolerance =
      std::max<int64_t>(1, static_cast<int64_t>(3.0 * (view.end - view.start) / view.plot.w));
  auto find = [&](const std::vector<MareyTrack::Op>& ops,
                  int64_t max_duration) -> const MareyTrack::Op* {
    auto first_after = std::partition_point(ops.begin(), ops.end(), [&](const MareyTrack::Op& op) {
      return track->StartOf(op, view.raw) <= t + tolerance;
    });
    const MareyTrack::Op* best = nullptr;
    for (auto it = first_after; it != ops.begin();) {
      --it;
      const int64_t s = track->StartOf(*it, view.raw);
      if (s < t - tolerance - max_duration - (view.raw ? 1'000'000 : 0)) break;
      const int64_t e = track->EndOf(*it, view.raw);
      if (e < t - tolerance) continue;
      if (best == nullptr || e - s < best->end - best->start) best = &*it;
    }
    return best;
  };
  auto describe = [&](const MareyTrack::Op& op) {
    hit.kind = Hit::Kind::kOperator;
    hit.op = scene.names->Name(op.name);
    hit.op_class = op.cls;
    hit.start_ns = track->StartOf(op, view.raw);
    hit.duration_ns = op.end - op.start;
    hit.step = op.step;
    std::string where =
        row.kind == MareyRowKind::kDevice
            ? row.label
            : row.group_key + " (" + MareyRowKindSuffix(row.kind) + " over its devices)";
    hit.text = (hit.op.empty() ? std::string("(unnamed)") : hit.op) + "\n" + OpClassName(op.cls) +
               " on " + where +
               "\nstart: " + FormatOffset(static_cast<double>(hit.start_ns - scene.origin_ns)) +
               "\nduration: " + FormatDuration(static_cast<double>(hit.duration_ns)) +
               "\nstep: " + std::to_string(op.step);
    return hit;
  };
  if (const MareyTrack::Op* op = find(track->comm, track->max_comm)) return describe(*op);
  const double bin_ns = static_cast<double>(view.end - view.start) / scene.bins;
  const int64_t bin = static_cast<int64_t>((t - view.start) / bin_ns);
  if (bin >= 0 && bin < static_cast<int64_t>(scene.bins) &&
      layout.merged(index, static_cast<uint32_t>(bin))) {
    const int64_t b0 = view.start + static_cast<int64_t>(bin_ns * bin);
    const int64_t b1 = view.start + static_cast<int64_t>(bin_ns * (bin + 1));
    auto at = [&](int64_t time) {
      return static_cast<size_t>(std::partition_point(track->compute.begin(), track->compute.end(),
                                                      [&](const MareyTrack::Op& op) {
                                                        return track->StartOf(op, view.raw) < time;
                                                      }) -
                                 track->compute.begin());
    };
    const size_t a = at(b0), b = at(b1);
    hit.kind = Hit::Kind::kMergedBin;
    hit.merged_operators = static_cast<uint32_t>(b - a);
    hit.busy_ns = track->busy_prefix[b] - track->busy_prefix[a];
    hit.start_ns = b0;
    hit.duration_ns = b1 - b0;
    if (b > a) hit.step = track->compute[a].step;
    hit.op_class = row.gpu ? OpClass::kGpuKernel : OpClass::kCompute;
    hit.text = std::to_string(hit.merged_operators) +
               (row.gpu ? " kernels merged on " : " compute operators merged on ") + row.label +
               "\nbin: " + FormatOffset(static_cast<double>(b0 - scene.origin_ns)) + " .. " +
               FormatOffset(static_cast<double>(b1 - scene.origin_ns)) +
               "\nbusy: " + FormatDuration(static_cast<double>(hit.busy_ns)) +
               "\nzoom in to see each one";
    return hit;
  }
  if (const MareyTrack::Op* op = find(track->compute, track->max_compute)) return describe(*op);
  return std::nullopt;
}

}  // namespace trainscope::viewer
