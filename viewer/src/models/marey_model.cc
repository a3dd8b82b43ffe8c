#include "trainscope/viewer/marey_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>
#include <unordered_map>

#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

constexpr float kLeftMargin = 150;
constexpr float kTopMargin = 58;
constexpr float kBottomMargin = 40;
constexpr float kPixelMapColumn = 18;
constexpr float kPixelMapGap = 10;
constexpr float kRightMargin = kPixelMapGap + 3 * kPixelMapColumn + 8;
constexpr Color kFlopsLineColor = Rgba(27, 94, 32);
constexpr Color kMemoryLineColor = Rgba(141, 110, 99);
constexpr Color kSelectedStepColor = Rgba(232, 240, 252);
constexpr Color kFocusRowColor = Rgba(253, 232, 232);
constexpr Color kPixelMapHigh = Rgba(21, 67, 150);

// Dense frames lay rows out on at most this many threads.
constexpr size_t kMaxLayoutThreads = 8;

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t Mix(uint64_t h, uint64_t v) { return SplitMix(h ^ SplitMix(v)); }

Color ClassColor(OpClass c) {
  switch (c) {
    case OpClass::kCompute:
      return kComputeColor;
    case OpClass::kCollective:
      return kCollectiveColor;
    case OpClass::kSend:
      return kSendColor;
    case OpClass::kRecv:
      return kRecvColor;
  }
  return kComputeColor;
}

Color Lerp(Color a, Color b, double f) {
  f = std::clamp(f, 0.0, 1.0);
  auto channel = [&](int shift) {
    const double x = ((a >> shift) & 0xFF) * (1 - f) + ((b >> shift) & 0xFF) * f;
    return static_cast<uint32_t>(std::lround(x)) << shift;
  };
  return channel(24) | channel(16) | channel(8) | channel(0);
}

const char* RowKindSuffix(MareyModel::RowKind kind) {
  switch (kind) {
    case MareyModel::RowKind::kGroupMin:
      return "min";
    case MareyModel::RowKind::kGroupAvg:
      return "avg";
    case MareyModel::RowKind::kGroupMax:
      return "max";
    case MareyModel::RowKind::kDevice:
      break;
  }
  return "";
}

}  // namespace

struct MareyModel::Op {
  int64_t start = 0;
  int64_t end = 0;
  uint64_t key = 0;       // joins the same operator across rows
  int32_t raw_delta = 0;  // raw start - start - Track::raw_base
  uint32_t name = 0;
  uint32_t step = 0;
  OpClass cls = OpClass::kCompute;
};

struct MareyModel::Track {
  uint32_t rank = 0;
  std::vector<Op> compute;
  std::vector<Op> comm;
  std::vector<int64_t> busy_prefix;  // compute: summed durations of compute[0, i)
  int64_t raw_base = 0;
  bool raw_base_set = false;
  int64_t max_compute = 0;
  int64_t max_comm = 0;
  bool dirty = true;
  // Communication in blocks of kBlock operators: the block's extent on the
  // aligned clock, its raw deltas' range and its first operator's class.
  static constexpr size_t kBlock = 32;
  std::vector<int64_t> block_start;
  std::vector<int64_t> block_end;
  std::vector<int32_t> block_raw_low;
  std::vector<int32_t> block_raw_high;
  std::vector<OpClass> block_class;
  // (step, name) -> operators seen, to number repeated operators in a step.
  std::unordered_map<uint64_t, uint32_t> occurrences;
  uint64_t newest_step = 0;
  // A coarse index over compute on the aligned clock: at uniformly spaced
  // times, everything a density bin's edge needs. A zoomed-out frame then
  // reads one small array per row instead of probing the operators, which
  // is memory-bound (a cache miss per probe) with thousands of rows.
  struct FineEdge {
    size_t index = 0;                // compute operators starting before the time
    int64_t busy = 0;                // busy_prefix[index]
    int64_t next_start = INT64_MAX;  // compute[index].start
    int64_t prev_end = INT64_MIN;    // compute[index - 1].end
  };
  // Communication as the dense loop reads it: 16 bytes instead of an Op's 40
  // (that loop streams every visible one each frame).
  struct Span {
    int64_t start;
    int32_t duration;  // clamped to 2^31 - 1 ns
    OpClass cls;
  };
  std::vector<Span> comm_spans;
  static constexpr size_t kOpsPerFineEdge = 8;
  static constexpr size_t kMinOpsForFineEdges = 1024;
  int64_t fine_origin = 0;
  int64_t fine_ns = 0;  // 0: no index (few operators)
  std::vector<FineEdge> fine;
  // The index entry nearest to t (fine_ns > 0).
  const FineEdge& FineAt(int64_t t) const {
    const int64_t i = (t - fine_origin + fine_ns / 2) / fine_ns;
    return fine[static_cast<size_t>(
        std::clamp<int64_t>(i, 0, static_cast<int64_t>(fine.size()) - 1))];
  }
  void BuildFineEdges() {
    fine.clear();
    fine_ns = 0;
    if (compute.size() < kMinOpsForFineEdges) return;
    fine_origin = compute.front().start;
    const int64_t span = compute.back().start - fine_origin + 1;
    const size_t n = compute.size() / kOpsPerFineEdge;
    fine_ns = std::max<int64_t>(1, span / static_cast<int64_t>(n));
    fine.resize(static_cast<size_t>(span / fine_ns) + 2);
    size_t j = 0;
    for (size_t i = 0; i < fine.size(); ++i) {
      const int64_t t = fine_origin + static_cast<int64_t>(i) * fine_ns;
      while (j < compute.size() && compute[j].start < t) ++j;
      FineEdge& e = fine[i];
      e.index = j;
      e.busy = busy_prefix[j];
      e.next_start = j < compute.size() ? compute[j].start : INT64_MAX;
      e.prev_end = j > 0 ? compute[j - 1].end : INT64_MIN;
    }
  }

  void Push(const Op& op) {
    std::vector<Op>& ops = op.cls == OpClass::kCompute ? compute : comm;
    ops.push_back(op);
    dirty = true;
  }
  void Prepare() {
    if (!dirty) return;
    auto by_start = [](const Op& a, const Op& b) { return a.start < b.start; };
    if (!std::is_sorted(compute.begin(), compute.end(), by_start)) {
      std::stable_sort(compute.begin(), compute.end(), by_start);
    }
    if (!std::is_sorted(comm.begin(), comm.end(), by_start)) {
      std::stable_sort(comm.begin(), comm.end(), by_start);
    }
    busy_prefix.resize(compute.size() + 1);
    busy_prefix[0] = 0;
    max_compute = 0;
    for (size_t i = 0; i < compute.size(); ++i) {
      const int64_t d = std::max<int64_t>(0, compute[i].end - compute[i].start);
      busy_prefix[i + 1] = busy_prefix[i] + d;
      max_compute = std::max(max_compute, d);
    }
    BuildFineEdges();
    max_comm = 0;
    comm_spans.resize(comm.size());
    for (size_t j = 0; j < comm.size(); ++j) {
      const int64_t d = std::max<int64_t>(0, comm[j].end - comm[j].start);
      max_comm = std::max(max_comm, d);
      comm_spans[j] = {comm[j].start, static_cast<int32_t>(std::min<int64_t>(d, INT32_MAX)),
                       comm[j].cls};
    }
    const size_t blocks = comm.size() / kBlock;
    block_start.assign(blocks, INT64_MAX);
    block_end.assign(blocks, INT64_MIN);
    block_raw_low.assign(blocks, INT32_MAX);
    block_raw_high.assign(blocks, INT32_MIN);
    block_class.assign(blocks, OpClass::kCollective);
    for (size_t b = 0; b < blocks; ++b) {
      block_class[b] = comm[b * kBlock].cls;
      for (size_t j = b * kBlock; j < (b + 1) * kBlock; ++j) {
        block_start[b] = std::min(block_start[b], comm[j].start);
        block_end[b] = std::max(block_end[b], comm[j].end);
        block_raw_low[b] = std::min(block_raw_low[b], comm[j].raw_delta);
        block_raw_high[b] = std::max(block_raw_high[b], comm[j].raw_delta);
      }
    }
    dirty = false;
  }
};

struct MareyModel::Group {
  std::string key;
  std::vector<uint32_t> ranks;
  Track min;
  Track avg;
  Track max;
};

// What a row put on screen, for joining it with the next row.
struct MareyModel::RowLayout {
  struct Item {
    uint64_t key;
    float x0;
    float x1;
    OpClass cls;
  };
  std::vector<Item> items;
  std::vector<std::pair<float, float>> merged;  // per bin; x1 < 0: not merged
};

MareyModel::MareyModel(const NameTable* names) : MareyModel(names, Options{}) {}

MareyModel::MareyModel(const NameTable* names, Options options) : names_(names), options_(options) {
  options_.bins = std::max<uint32_t>(1, options_.bins);
  SetViewport(width_, height_);
}

MareyModel::~MareyModel() = default;

void MareyModel::MarkDirty() {
  layout_dirty_ = true;
  ++version_;
}

// ---------------------------------------------------------------- data

MareyModel::Track& MareyModel::DeviceTrack(uint32_t rank) {
  std::unique_ptr<Track>& track = devices_[rank];
  if (track == nullptr) {
    track = std::make_unique<Track>();
    track->rank = rank;
    if (!device_info_.count(rank)) device_info_[rank] = DeviceInfo{rank, 0, ""};
    rows_dirty_ = true;
    groups_dirty_ = true;
  }
  return *track;
}

void MareyModel::SetDevices(const std::vector<DeviceInfo>& devices) {
  for (const DeviceInfo& device : devices) {
    device_info_[device.rank] = device;
    DeviceTrack(device.rank);
  }
  rows_dirty_ = groups_dirty_ = true;
  MarkDirty();
}

void MareyModel::AddOperators(const std::vector<OperatorRecord>& operators) {
  if (operators.empty()) return;
  // Number repeated operators in time order on each device, whatever order
  // the batch came in.
  std::vector<uint32_t> order(operators.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const OperatorRecord& x = operators[a];
    const OperatorRecord& y = operators[b];
    return x.rank != y.rank ? x.rank < y.rank : x.start_ns < y.start_ns;
  });
  Track* track = nullptr;
  for (uint32_t index : order) {
    const OperatorRecord& record = operators[index];
    if (track == nullptr || track->rank != record.rank) track = &DeviceTrack(record.rank);
    if (!track->raw_base_set) {
      track->raw_base = record.raw_start_ns - record.start_ns;
      track->raw_base_set = true;
    }
    Op op;
    op.start = record.start_ns;
    op.end = std::max(record.end_ns, record.start_ns);
    op.raw_delta = static_cast<int32_t>(std::clamp<int64_t>(
        record.raw_start_ns - record.start_ns - track->raw_base, INT32_MIN, INT32_MAX));
    op.name = record.name;
    op.step = static_cast<uint32_t>(record.step);
    op.cls = record.op_class;
    switch (record.op_class) {
      case OpClass::kSend:
        op.key =
            Mix(Mix(Mix(Mix(3, record.group), record.rank), static_cast<uint64_t>(record.peer)),
                record.group_sequence);
        break;
      case OpClass::kRecv:
        op.key =
            Mix(Mix(Mix(Mix(3, record.group), static_cast<uint64_t>(record.peer)), record.rank),
                record.group_sequence);
        break;
      case OpClass::kCollective:
        if (record.group_sequence != 0) {
          op.key = Mix(Mix(Mix(2, record.group), record.group_sequence), record.name);
          break;
        }
        [[fallthrough]];
      case OpClass::kCompute: {
        const uint64_t slot = Mix(record.step, record.name);
        const uint32_t occurrence = track->occurrences[slot]++;
        op.key = Mix(Mix(Mix(1, record.step), record.name), occurrence);
        if (record.step > track->newest_step) track->newest_step = record.step;
        break;
      }
    }
    // Steps come in order: forget the numbering of steps long closed.
    if (track->occurrences.size() > 200'000) track->occurrences.clear();
    track->Push(op);
    ++operators_per_step_[record.step];
    ++operator_count_;
    aligned_min_ = std::min(aligned_min_, record.start_ns);
    aligned_max_ = std::max(aligned_max_, op.end);
    raw_min_ = std::min(raw_min_, record.raw_start_ns);
    raw_max_ = std::max(raw_max_, record.raw_start_ns + (op.end - op.start));
  }
  tracks_dirty_ = groups_dirty_ = true;
  EvictIfNeeded();
  MarkDirty();
}

void MareyModel::EvictIfNeeded() {
  if (operator_count_ <= options_.max_operators) return;
  // Drop whole steps, oldest first, down to 90 % of the cap.
  const size_t target = options_.max_operators / 10 * 9;
  uint64_t cutoff = 0;
  size_t remaining = operator_count_;
  for (auto it = operators_per_step_.begin();
       it != operators_per_step_.end() && remaining > target;) {
    remaining -= it->second;
    evicted_ += it->second;
    cutoff = it->first + 1;
    it = operators_per_step_.erase(it);
  }
  auto old = [cutoff](const Op& op) { return op.step < cutoff; };
  for (auto& [rank, track] : devices_) {
    std::erase_if(track->compute, old);
    std::erase_if(track->comm, old);
    track->dirty = true;
  }
  operator_count_ = remaining;
  RecomputeExtent();
}

void MareyModel::RecomputeExtent() {
  aligned_min_ = raw_min_ = INT64_MAX;
  aligned_max_ = raw_max_ = INT64_MIN;
  for (const auto& [rank, track] : devices_) {
    for (const auto* ops : {&track->compute, &track->comm}) {
      for (const Op& op : *ops) {
        aligned_min_ = std::min(aligned_min_, op.start);
        aligned_max_ = std::max(aligned_max_, op.end);
        const int64_t raw = op.start + track->raw_base + op.raw_delta;
        raw_min_ = std::min(raw_min_, raw);
        raw_max_ = std::max(raw_max_, raw + op.end - op.start);
      }
    }
  }
}

void MareyModel::AddStep(const StepRecord& step) {
  steps_[step.step] = step;
  while (steps_.size() > 100'000) steps_.erase(steps_.begin());
  MarkDirty();
}

void MareyModel::SetAlerts(const std::vector<Alert>& alerts) {
  alerts_ = alerts;
  alerts_by_rank_.clear();
  for (const Alert& alert : alerts_) {
    // The glyph marks the blamed device (victims are named in the text);
    // a job-wide alert marks every device it names.
    if (alert.cause >= 0) {
      alerts_by_rank_[static_cast<uint32_t>(alert.cause)].push_back(&alert);
    } else {
      for (uint32_t rank : alert.ranks) alerts_by_rank_[rank].push_back(&alert);
    }
  }
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::Clear() {
  devices_.clear();
  device_info_.clear();
  groups_.clear();
  steps_.clear();
  operators_per_step_.clear();
  operator_count_ = 0;
  RecomputeExtent();
  auto_range_ = true;
  rows_dirty_ = groups_dirty_ = tracks_dirty_ = true;
  MarkDirty();
}

// ---------------------------------------------------------------- view

void MareyModel::SetViewport(int width, int height) {
  width_ = std::max(width, 320);
  height_ = std::max(height, 200);
  plot_ = {kLeftMargin, kTopMargin, static_cast<float>(width_) - kLeftMargin - kRightMargin,
           static_cast<float>(height_) - kTopMargin - kBottomMargin};
  MarkDirty();
}

void MareyModel::SetTimeRange(int64_t start_ns, int64_t end_ns) {
  if (end_ns < start_ns) std::swap(start_ns, end_ns);
  end_ns = std::max(end_ns, start_ns + 100);  // at most 100 ns across the plot
  view_start_ = start_ns;
  view_end_ = end_ns;
  auto_range_ = false;
  MarkDirty();
}

void MareyModel::ResetZoom() {
  auto_range_ = true;
  MarkDirty();
}

void MareyModel::ZoomAt(float x, double factor) {
  if (factor <= 0) return;
  if (auto_range_) Layout();  // resolve the automatic range first
  const int64_t t = XToTime(x);
  const double start = t - (t - view_start_) / factor;
  const double end = t + (view_end_ - t) / factor;
  SetTimeRange(static_cast<int64_t>(start), static_cast<int64_t>(end));
}

void MareyModel::PanBy(float dx_pixels) {
  if (auto_range_) Layout();
  const double span = static_cast<double>(view_end_ - view_start_);
  const int64_t shift = static_cast<int64_t>(dx_pixels * span / std::max(1.0f, plot_.w));
  SetTimeRange(view_start_ - shift, view_end_ - shift);
}

void MareyModel::BrushTo(float x0, float x1) {
  if (std::fabs(x1 - x0) < 3) return;
  if (auto_range_) Layout();
  SetTimeRange(XToTime(std::min(x0, x1)), XToTime(std::max(x0, x1)));
}

void MareyModel::SetRawTimestamps(bool raw) {
  if (raw == raw_) return;
  raw_ = raw;
  auto_range_ = true;  // the clocks may be far apart: start from the whole run
  MarkDirty();
}

void MareyModel::SetGrouping(Grouping grouping) {
  if (grouping == grouping_) return;
  grouping_ = grouping;
  rows_dirty_ = groups_dirty_ = true;
  MarkDirty();
}

void MareyModel::SetExpanded(const std::string& group_key, bool expanded) {
  expanded_[group_key] = expanded;
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::ToggleExpanded(const std::string& group_key) {
  SetExpanded(group_key, !expanded_[group_key]);
}

void MareyModel::SetRankFilter(const std::vector<uint32_t>& ranks) {
  rank_filter_ = ranks;
  std::sort(rank_filter_.begin(), rank_filter_.end());
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::SetSelectedStep(std::optional<uint64_t> step) {
  if (step == selected_step_) return;
  selected_step_ = step;
  MarkDirty();
}

void MareyModel::FocusOnAlert(const Alert& alert) {
  focus_ranks_ = alert.ranks;
  std::sort(focus_ranks_.begin(), focus_ranks_.end());
  focus_name_ = alert.op.empty() ? 0 : names_->Find(alert.op);
  focus_step_ = alert.step;
  selected_step_ = alert.step;
  PrepareTracks();
  int64_t low = INT64_MAX, high = INT64_MIN;
  if (focus_name_ != 0) {
    for (uint32_t rank : focus_ranks_) {
      auto it = devices_.find(rank);
      if (it == devices_.end()) continue;
      for (const auto* ops : {&it->second->compute, &it->second->comm}) {
        for (const Op& op : *ops) {
          if (op.name != focus_name_ || op.step != alert.step) continue;
          low = std::min(low, OpStart(*it->second, op));
          high = std::max(high, OpEnd(*it->second, op));
        }
      }
    }
  }
  if (low == INT64_MAX) {
    auto step = steps_.find(alert.step);
    if (step != steps_.end()) low = step->second.start_ns, high = step->second.end_ns;
  }
  if (low != INT64_MAX && high >= low) {
    // Keep the operator in context: it fills about a third of the plot.
    const int64_t pad = std::max<int64_t>((high - low), 2000);
    SetTimeRange(low - pad, high + pad);
  }
  rows_dirty_ = true;
  MarkDirty();
}

void MareyModel::ClearFocus() {
  focus_ranks_.clear();
  focus_name_ = 0;
  focus_step_.reset();
  MarkDirty();
}

float MareyModel::TimeToX(int64_t t) const {
  const double span = static_cast<double>(view_end_ - view_start_);
  return plot_.x + static_cast<float>((static_cast<double>(t - view_start_) / span) * plot_.w);
}

int64_t MareyModel::XToTime(float x) const {
  const double span = static_cast<double>(view_end_ - view_start_);
  return view_start_ + static_cast<int64_t>((x - plot_.x) / std::max(1.0f, plot_.w) * span);
}

int64_t MareyModel::origin_ns() const {
  const int64_t origin = raw_ ? raw_min_ : aligned_min_;
  return origin == INT64_MAX ? 0 : origin;
}

int64_t MareyModel::OpStart(const Track& track, const Op& op) const {
  return raw_ ? op.start + track.raw_base + op.raw_delta : op.start;
}

int64_t MareyModel::OpEnd(const Track& track, const Op& op) const {
  return raw_ ? op.end + track.raw_base + op.raw_delta : op.end;
}

// ---------------------------------------------------------------- layout

void MareyModel::PrepareTracks() {
  if (!tracks_dirty_) return;
  for (auto& [rank, track] : devices_) track->Prepare();
  tracks_dirty_ = false;
}

void MareyModel::BuildGroups() {
  if (!groups_dirty_) return;
  groups_dirty_ = false;
  groups_.clear();
  if (grouping_ == Grouping::kNone) return;
  for (const auto& [rank, track] : devices_) {
    const DeviceInfo& info = device_info_[rank];
    const std::string key = grouping_ == Grouping::kStage
                                ? "stage " + std::to_string(info.stage)
                                : "host " + (info.host.empty() ? std::string("?") : info.host);
    std::unique_ptr<Group>& group = groups_[key];
    if (group == nullptr) {
      group = std::make_unique<Group>();
      group->key = key;
    }
    group->ranks.push_back(rank);
  }
  struct Aggregate {
    int64_t min_start = INT64_MAX, max_start = INT64_MIN, min_end = INT64_MAX, max_end = INT64_MIN;
    double sum_start = 0, sum_end = 0, sum_raw = 0;
    uint32_t count = 0;
    Op first;
  };
  for (auto& [key, group] : groups_) {
    std::unordered_map<uint64_t, Aggregate> aggregates;
    std::vector<uint64_t> order;  // first-seen order keeps the output nearly sorted
    double raw_base_sum = 0;
    for (uint32_t rank : group->ranks) {
      const Track& track = *devices_.at(rank);
      raw_base_sum += static_cast<double>(track.raw_base);
      for (const auto* ops : {&track.compute, &track.comm}) {
        for (const Op& op : *ops) {
          // Sends and receives share a key to join across devices; keep
          // them apart inside a group.
          const uint64_t key = Mix(op.key, static_cast<uint64_t>(op.cls));
          auto [it, inserted] = aggregates.try_emplace(key);
          Aggregate& a = it->second;
          if (inserted) {
            a.first = op;
            order.push_back(key);
          }
          a.min_start = std::min(a.min_start, op.start);
          a.max_start = std::max(a.max_start, op.start);
          a.min_end = std::min(a.min_end, op.end);
          a.max_end = std::max(a.max_end, op.end);
          a.sum_start += static_cast<double>(op.start);
          a.sum_end += static_cast<double>(op.end);
          a.sum_raw += static_cast<double>(op.raw_delta);
          ++a.count;
        }
      }
    }
    const int64_t raw_base =
        static_cast<int64_t>(raw_base_sum / std::max<size_t>(1, group->ranks.size()));
    for (Track* track : {&group->min, &group->avg, &group->max}) {
      track->raw_base = raw_base;
      track->rank = group->ranks.empty() ? 0 : group->ranks.front();
    }
    for (uint64_t key : order) {
      const Aggregate& a = aggregates[key];
      Op op = a.first;
      op.raw_delta = static_cast<int32_t>(a.sum_raw / a.count);
      op.start = a.min_start;
      op.end = a.min_end;
      group->min.Push(op);
      op.start = static_cast<int64_t>(a.sum_start / a.count);
      op.end = static_cast<int64_t>(a.sum_end / a.count);
      group->avg.Push(op);
      op.start = a.max_start;
      op.end = a.max_end;
      group->max.Push(op);
    }
    group->min.Prepare();
    group->avg.Prepare();
    group->max.Prepare();
  }
}

void MareyModel::BuildRows() {
  if (!rows_dirty_) return;
  rows_dirty_ = false;
  rows_.clear();
  row_tracks_.clear();
  auto included = [&](uint32_t rank) {
    return rank_filter_.empty() ||
           std::binary_search(rank_filter_.begin(), rank_filter_.end(), rank);
  };
  auto add_device = [&](uint32_t rank) {
    if (!included(rank)) return;
    Row row;
    row.kind = RowKind::kDevice;
    row.rank = rank;
    row.label = "rank " + std::to_string(rank);
    row.has_alert = alerts_by_rank_.count(rank) > 0;
    rows_.push_back(row);
    row_tracks_.push_back(devices_.at(rank).get());
  };
  if (grouping_ == Grouping::kNone) {
    for (const auto& [rank, track] : devices_) add_device(rank);
    return;
  }
  for (const auto& [key, group] : groups_) {
    if (std::none_of(group->ranks.begin(), group->ranks.end(), included)) continue;
    const bool expanded = expanded_[key];
    bool alert = false;
    for (uint32_t rank : group->ranks) alert = alert || alerts_by_rank_.count(rank) > 0;
    const RowKind kinds[] = {RowKind::kGroupMin, RowKind::kGroupAvg, RowKind::kGroupMax};
    const Track* tracks[] = {&group->min, &group->avg, &group->max};
    for (int k = 0; k < 3; ++k) {
      Row row;
      row.kind = kinds[k];
      row.group_key = key;
      row.label = (k == 0 ? std::string(expanded ? "\xE2\x96\xBE " : "\xE2\x96\xB8 ") + key + " "
                          : std::string()) +
                  RowKindSuffix(kinds[k]);
      row.has_alert = alert && k == 0;
      row.expanded = expanded;
      rows_.push_back(row);
      row_tracks_.push_back(tracks[k]);
    }
    if (expanded) {
      for (uint32_t rank : group->ranks) {
        const size_t before = rows_.size();
        add_device(rank);
        if (rows_.size() > before) rows_.back().group_key = key;  // indented under the group
      }
    }
  }
}

const MareyModel::Track* MareyModel::RowTrack(size_t index) const {
  return index < row_tracks_.size() ? row_tracks_[index] : nullptr;
}

const std::vector<MareyModel::Row>& MareyModel::Rows() {
  if (layout_dirty_) Layout();
  return rows_;
}

const DrawList& MareyModel::Draw() {
  if (layout_dirty_) Layout();
  return list_;
}

void MareyModel::Layout() {
  layout_dirty_ = false;
  PrepareTracks();
  BuildGroups();
  BuildRows();
  list_.Clear();
  stats_ = {};
  if (auto_range_) {
    const int64_t low = raw_ ? raw_min_ : aligned_min_;
    const int64_t high = raw_ ? raw_max_ : aligned_max_;
    if (low <= high) {
      const int64_t pad = std::max<int64_t>((high - low) / 100, 1);
      view_start_ = low - pad;
      view_end_ = high + pad;
    } else {
      view_start_ = 0;
      view_end_ = 1'000'000;
    }
  }
  list_.backgrounds.push_back(
      {{0, 0, static_cast<float>(width_), static_cast<float>(height_)}, kBackgroundColor});
  list_.texts.push_back({12, 14, "Marey graph", kTextColor, Text::Align::kLeft, true, 11});
  const size_t n = rows_.size();
  stats_.rows = n;
  if (n == 0) {
    list_.texts.push_back({plot_.x + plot_.w / 2, plot_.y + plot_.h / 2, "No operators yet",
                           kAxisColor, Text::Align::kCenter});
    AddAxes();
    return;
  }
  pitch_ = plot_.h / static_cast<float>(n);
  band_half_ = std::clamp(pitch_ * 0.16f, 1.0f, 5.0f);
  const bool dense = pitch_ < options_.dense_row_px;
  stats_.dense = dense;
  for (size_t i = 0; i < n; ++i)
    rows_[i].axis_y = plot_.y + pitch_ * (static_cast<float>(i) + 0.5f);

  // Behind everything: the selected step and the rows of a focused alert.
  list_.backgrounds.push_back({plot_, Rgba(252, 252, 253), WithAlpha(kAxisColor, 110)});
  if (selected_step_.has_value()) {
    auto step = steps_.find(*selected_step_);
    if (step != steps_.end() && !raw_) {
      const float x0 = std::max(plot_.x, TimeToX(step->second.start_ns));
      const float x1 = std::min(plot_.x + plot_.w, TimeToX(step->second.end_ns));
      if (x1 > x0)
        list_.backgrounds.push_back({{x0, plot_.y, x1 - x0, plot_.h}, kSelectedStepColor});
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (rows_[i].kind == RowKind::kDevice &&
        std::binary_search(focus_ranks_.begin(), focus_ranks_.end(), rows_[i].rank)) {
      list_.backgrounds.push_back(
          {{plot_.x, rows_[i].axis_y - pitch_ / 2, plot_.w, pitch_}, kFocusRowColor});
    }
  }
  AddAxes();

  row_merged_.assign(n, std::vector<uint8_t>(options_.bins, 0));
  if (dense) {
    LayoutDenseRows();
  } else {
    RowLayout previous, current;
    for (size_t i = 0; i < n; ++i) {
      current.items.clear();
      current.merged.clear();
      // The axis goes under the bands.
      list_.backgrounds.push_back(
          {{plot_.x, rows_[i].axis_y - 0.5f, plot_.w, 1}, WithAlpha(kAxisColor, 150)});
      LayoutRow(i, &current, nullptr, &stats_);
      if (i > 0) {
        // Compute and collectives join only within a pipeline stage: other
        // stages run other layers, whatever their operators are called.
        const int a = RowStage(i - 1), b = RowStage(i);
        const bool same_stage = a < 0 || b < 0 || a == b;
        AddJoins(previous, current, rows_[i - 1].axis_y + band_half_, rows_[i].axis_y - band_half_,
                 same_stage);
      }
      if (pitch_ >= options_.chart_row_px) AddLineCharts(i, rows_[i].axis_y, pitch_);
      std::swap(previous, current);
    }
  }

  // Row labels (every k-th when rows are thin), alert crosses, pixel map.
  const int label_every = std::max(1, static_cast<int>(std::ceil(13.0f / pitch_)));
  for (size_t i = 0; i < n; ++i) {
    const Row& row = rows_[i];
    const bool group_head = row.kind == RowKind::kGroupMin;
    if (static_cast<int>(i) % label_every == 0 || group_head) {
      const bool is_group = row.kind != RowKind::kDevice;
      Text label{plot_.x - 20,        row.axis_y,
                 row.label,           is_group ? Rgba(25, 60, 140) : kTextColor,
                 Text::Align::kRight, group_head};
      if (!is_group && !row.group_key.empty()) label.x -= 10;
      list_.texts.push_back(label);
    }
    if (row.has_alert) {
      list_.crosses.push_back({{plot_.x - 9, row.axis_y},
                               std::clamp(pitch_ * 0.45f, 3.0f, 6.0f),
                               kAlertColor,
                               pitch_ < 6 ? 1.5f : 2.5f});
    }
  }
  AddPixelMap();

  // Legend.
  const float legend_y = static_cast<float>(height_) - 14;
  float x = 12;
  auto swatch = [&](Color color, const std::string& label) {
    list_.rects.push_back({{x, legend_y - 5, 14, 10}, color, WithAlpha(kAxisColor, 150)});
    list_.texts.push_back({x + 18, legend_y, label, kTextColor});
    x += 30 + 7.2f * static_cast<float>(label.size());
  };
  swatch(kComputeColor, "compute");
  swatch(kMergedColor, "compute, merged bin");
  swatch(kCollectiveColor, "collective");
  swatch(kSendColor, "send");
  swatch(kRecvColor, "recv");
  list_.lines.push_back({{x, legend_y}, {x + 16, legend_y}, kFlopsLineColor, 1.5f});
  list_.texts.push_back({x + 20, legend_y, "FLOPs", kTextColor});
  x += 76;
  list_.lines.push_back({{x, legend_y}, {x + 16, legend_y}, kMemoryLineColor, 1.5f, true});
  list_.texts.push_back({x + 20, legend_y, "peak memory", kTextColor});
  x += 124;
  list_.crosses.push_back({{x + 5, legend_y}, 4, kAlertColor, 2});
  list_.texts.push_back({x + 14, legend_y, "alert", kTextColor});

  stats_.rows = n;
}

void MareyModel::LayoutDenseRows() {
  EnsureImage();
  const size_t n = rows_.size();
  const int image_width = list_.image.width;
  const int image_height = list_.image.height;
  // A row's pixel rows [y0, y1): its share of the plot, with a 1 px gap
  // between rows when there is room for one; always the pixel row of its
  // axis (hit tests, labels).
  auto pixel_rows = [&](size_t i) {
    const float centre = pitch_ * (static_cast<float>(i) + 0.5f);
    int y0 = static_cast<int>(pitch_ * static_cast<float>(i));
    int y1 = static_cast<int>(pitch_ * static_cast<float>(i + 1));
    if (pitch_ >= 3) {
      const float half = (pitch_ - 1) / 2;
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

void MareyModel::AddAxes() {
  const int64_t origin = origin_ns();
  const double from = static_cast<double>(view_start_ - origin);
  const double to = static_cast<double>(view_end_ - origin);
  const int max_ticks = std::max(2, static_cast<int>(plot_.w / 110));
  for (double tick : NiceTicks(from, to, max_ticks)) {
    const float x = TimeToX(origin + static_cast<int64_t>(tick));
    if (x < plot_.x - 0.5f || x > plot_.x + plot_.w + 0.5f) continue;
    list_.lines.push_back({{x, plot_.y}, {x, plot_.y + plot_.h}, kGridColor, 1});
    list_.lines.push_back({{x, plot_.y - 5}, {x, plot_.y}, kAxisColor, 1});
    list_.texts.push_back(
        {x, plot_.y - 13, FormatDuration(tick), kTextColor, Text::Align::kCenter});
  }
  const std::string clock = raw_ ? "raw device clocks" : "aligned clock";
  list_.texts.push_back({plot_.x, 34,
                         "time since the first operator (" + clock + "), showing " +
                             FormatDuration(static_cast<double>(view_end_ - view_start_)),
                         kAxisColor, Text::Align::kLeft});
  char summary[160];
  std::snprintf(summary, sizeof(summary), "%zu devices \xC2\xB7 %zu operators \xC2\xB7 %u bins",
                devices_.size(), operator_count_, options_.bins);
  list_.texts.push_back(
      {static_cast<float>(width_) - 12, 14, summary, kAxisColor, Text::Align::kRight});
  // Pixel map headers.
  const char* headers[] = {"FLOP", "FLOP/s", "mem"};
  for (int c = 0; c < 3; ++c) {
    const float x = plot_.x + plot_.w + kPixelMapGap + kPixelMapColumn * (c + 0.5f);
    list_.texts.push_back(
        {x, plot_.y - 22, headers[c], kTextColor, Text::Align::kCenter, false, 7, true});
  }
}

void MareyModel::EnsureImage() {
  if (!list_.image.pixels.empty()) return;
  const int width = std::max(1, static_cast<int>(plot_.w));
  const int height = std::max(1, static_cast<int>(plot_.h));
  list_.image.dest = {plot_.x, plot_.y, static_cast<float>(width), static_cast<float>(height)};
  list_.image.width = width;
  list_.image.height = height;
  list_.image.pixels.assign(static_cast<size_t>(width) * height, 0);
}

void MareyModel::LayoutRow(size_t index, RowLayout* layout, std::vector<Color>* line,
                           FrameStats* stats) {
  const Track* track = RowTrack(index);
  if (track == nullptr) return;
  const float axis_y = rows_[index].axis_y;
  const int64_t t0 = view_start_;
  const int64_t t1 = view_end_;
  const uint32_t bins = options_.bins;
  const double bin_ns = static_cast<double>(t1 - t0) / bins;
  const float bin_px = plot_.w / static_cast<float>(bins);
  const double px_per_ns = plot_.w / static_cast<double>(t1 - t0);
  const float right = plot_.x + plot_.w;
  const bool raw = raw_;
  const int64_t base = raw ? track->raw_base : 0;
  const int64_t raw_slack = raw ? 1'000'000 : 0;  // raw deltas may reorder slightly
  const bool focused_row =
      rows_[index].kind == RowKind::kDevice && focus_name_ != 0 &&
      std::binary_search(focus_ranks_.begin(), focus_ranks_.end(), rows_[index].rank);

  auto start_of = [&](const Op& op) { return raw ? op.start + base + op.raw_delta : op.start; };
  auto end_of = [&](const Op& op) { return raw ? op.end + base + op.raw_delta : op.end; };
  auto to_x = [&](int64_t t) {
    return plot_.x + static_cast<float>(static_cast<double>(t - t0) * px_per_ns);
  };
  auto first_at_or_after = [&](const std::vector<Op>& ops, size_t from, int64_t t) {
    return static_cast<size_t>(
        std::partition_point(ops.begin() + static_cast<std::ptrdiff_t>(from), ops.end(),
                             [&](const Op& op) { return start_of(op) < t; }) -
        ops.begin());
  };
  // The next edge is usually near the previous one: gallop from it so the
  // probes stay in cache lines already loaded (frames are memory-bound).
  auto gallop = [&](const std::vector<Op>& ops, size_t from, int64_t t) {
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
                             [&](const Op& op) { return start_of(op) < t; }) -
        ops.begin());
  };

  // Density bins over the compute operators (prefix counts: no scan). Zoomed
  // out, the bin edges come from the track's coarse index, rounded to its
  // grid (at most 1/8 of a bin): no operator is touched.
  const std::vector<Op>& compute = track->compute;
  std::vector<size_t> edges(bins + 1);
  const bool coarse = !raw && track->fine_ns > 0 && bin_ns >= 4.0 * track->fine_ns;
  std::vector<const Track::FineEdge*> fine_edges;
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
  const std::vector<Op>& comm = track->comm;
  // A view that holds the whole track (zoomed out) needs no search.
  const int64_t comm_low = t0 - track->max_comm - raw_slack;
  const int64_t comm_high = t1 + 1 + raw_slack;
  const size_t comm_from =
      comm.empty() || start_of(comm.front()) >= comm_low ? 0 : first_at_or_after(comm, 0, comm_low);
  const size_t comm_to = !comm.empty() && start_of(comm.back()) < comm_high
                             ? comm.size()
                             : gallop(comm, comm_from, comm_high);

  // A row with more operators than a third of its pixels is rasterised (one
  // colour per column) instead of becoming thousands of rectangles.
  std::vector<Color> local;
  std::vector<Color>* pixels = line;
  const bool heavy =
      line == nullptr && static_cast<float>(sparse + comm_to - comm_from) > plot_.w / 3;
  if (heavy) {
    EnsureImage();
    local.assign(static_cast<size_t>(list_.image.width), 0);
    pixels = &local;
  }
  const int width = pixels != nullptr ? static_cast<int>(pixels->size()) : 0;
  auto fill = [&](float x0, float x1, Color color) {
    int a = static_cast<int>(x0 - plot_.x);
    int b = static_cast<int>(std::ceil(x1 - plot_.x));
    a = std::clamp(a, 0, width);
    b = std::clamp(std::max(b, a + 1), 0, width);
    std::fill(pixels->begin() + a, pixels->begin() + b, color);
  };
  float last_x1[kOpClassCount] = {-1e9f, -1e9f, -1e9f, -1e9f};
  auto draw_op = [&](const Op& op) {
    const int64_t s = start_of(op);
    const int64_t e = end_of(op);
    if (e < t0 || s > t1) return;
    const float x0 = std::max(plot_.x, to_x(s));
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
      list_.rects.push_back({{x0, axis_y - band_half_, w, 2 * band_half_}, ClassColor(op.cls)});
    }
    if (line != nullptr) return;  // dense rows: no joins, no outlines
    if (focused_row && op.name == focus_name_ && (!focus_step_ || op.step == *focus_step_)) {
      list_.overlay_rects.push_back(
          {{x0 - 2, axis_y - band_half_ - 2, w + 4, 2 * band_half_ + 4}, 0, kAlertColor});
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
    const float x0 = std::max(plot_.x, to_x(s));
    const float x1 = std::max(x0 + 1, to_x(e));
    const double busy = static_cast<double>(coarse ? fine_edges[k + 1]->busy - fine_edges[k]->busy
                                                   : track->busy_prefix[edges[k + 1]] -
                                                         track->busy_prefix[edges[k]]);
    const double fraction = std::clamp(busy / std::max(1.0, bin_ns), 0.0, 1.0);
    last_x1[0] = std::max(last_x1[0], std::ceil(x1));
    if (pixels != nullptr) {
      fill(x0, x1, Lerp(Rgba(200, 230, 201), kMergedColor, 0.4 + 0.6 * fraction));
    } else {
      list_.rects.push_back({{x0, axis_y - band_half_, x1 - x0, 2 * band_half_},
                             WithAlpha(kMergedColor, static_cast<uint32_t>(120 + 135 * fraction)),
                             WithAlpha(Rgba(27, 94, 32), 200)});
    }
    if (line == nullptr) layout->merged[k] = {x0, x1};
  }

  // Communication: never merged. When rasterising, a block of operators
  // that lies within fewer pixels than it has operators covers every pixel
  // of its span anyway, so it is painted in one go.
  constexpr size_t kBlock = Track::kBlock;
  if (line != nullptr && !raw) {
    // Dense rows (no joins, no outlines, aligned clock): a tight loop that
    // paints each operator's pixel columns; thousands of rows make this the
    // frame's inner loop.
    Color* out = pixels->data();
    const Track::Span* spans = track->comm_spans.data();
    const Color colors[kOpClassCount] = {ClassColor(OpClass::kCompute),
                                         ClassColor(OpClass::kCollective),
                                         ClassColor(OpClass::kSend), ClassColor(OpClass::kRecv)};
    size_t drawn = 0;  // a local: the pixel stores could alias a member
    for (size_t j = comm_from; j < comm_to; ++j) {
      const Track::Span& op = spans[j];
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
  for (size_t j = comm_from; j < comm_to;) {
    if (pixels != nullptr && j % kBlock == 0 && j + kBlock <= comm_to) {
      const size_t block = j / kBlock;
      const int64_t s = track->block_start[block] + (raw ? base + track->block_raw_low[block] : 0);
      const int64_t e = track->block_end[block] + (raw ? base + track->block_raw_high[block] : 0);
      if (static_cast<double>(e - s) * px_per_ns <= static_cast<double>(kBlock) && e >= t0 &&
          s <= t1) {
        fill(std::max(plot_.x, to_x(s)), std::min(right, to_x(e)),
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
    const int y0 = std::max(0, static_cast<int>(axis_y - band_half_ - plot_.y));
    const int y1 =
        std::min(list_.image.height, static_cast<int>(std::ceil(axis_y + band_half_ - plot_.y)));
    for (int y = y0; y < y1; ++y) {
      std::copy(local.begin(), local.end(),
                list_.image.pixels.begin() + static_cast<size_t>(y) * list_.image.width);
    }
  }
}

int MareyModel::RowStage(size_t index) const {
  const Row& row = rows_[index];
  if (row.kind == RowKind::kDevice) {
    auto it = device_info_.find(row.rank);
    return it == device_info_.end() ? -1 : static_cast<int>(it->second.stage);
  }
  if (grouping_ != Grouping::kStage) return -1;
  auto group = groups_.find(row.group_key);
  if (group == groups_.end() || group->second->ranks.empty()) return -1;
  auto it = device_info_.find(group->second->ranks.front());
  return it == device_info_.end() ? -1 : static_cast<int>(it->second.stage);
}

void MareyModel::AddJoins(const RowLayout& upper, const RowLayout& lower, float y_top,
                          float y_bottom, bool same_stage) {
  if (y_bottom - y_top < 2) return;
  std::unordered_map<uint64_t, size_t> by_key;
  by_key.reserve(lower.items.size() * 2);
  for (size_t i = 0; i < lower.items.size(); ++i) by_key.emplace(lower.items[i].key, i);
  for (const auto& item : upper.items) {
    auto it = by_key.find(item.key);
    if (it == by_key.end()) continue;
    const bool point_to_point = item.cls == OpClass::kSend || item.cls == OpClass::kRecv;
    if (!same_stage && !point_to_point) continue;
    const auto& other = lower.items[it->second];
    Quad quad;
    quad.p[0] = {item.x0, y_top};
    quad.p[1] = {item.x1, y_top};
    quad.p[2] = {other.x1, y_bottom};
    quad.p[3] = {other.x0, y_bottom};
    quad.fill = WithAlpha(ClassColor(item.cls), item.cls == OpClass::kCompute ? 70 : 130);
    list_.quads.push_back(quad);
    ++stats_.joins;
  }
  const size_t bins = same_stage ? std::min(upper.merged.size(), lower.merged.size()) : 0;
  for (size_t k = 0; k < bins; ++k) {
    const auto& a = upper.merged[k];
    const auto& b = lower.merged[k];
    if (a.second < 0 || b.second < 0) continue;
    Quad quad;
    quad.p[0] = {a.first, y_top};
    quad.p[1] = {a.second, y_top};
    quad.p[2] = {b.second, y_bottom};
    quad.p[3] = {b.first, y_bottom};
    quad.fill = WithAlpha(kMergedColor, 45);
    list_.quads.push_back(quad);
    ++stats_.joins;
  }
}

std::vector<const DeviceStepRecord*> MareyModel::StepValues(size_t index) const {
  std::vector<const DeviceStepRecord*> values;
  if (steps_.empty() || index >= rows_.size()) return values;
  auto step = selected_step_.has_value() ? steps_.find(*selected_step_) : steps_.end();
  if (step == steps_.end()) step = std::prev(steps_.end());
  const Row& row = rows_[index];
  std::vector<uint32_t> ranks;
  if (row.kind == RowKind::kDevice) {
    ranks.push_back(row.rank);
  } else {
    auto group = groups_.find(row.group_key);
    if (group != groups_.end()) ranks = group->second->ranks;
  }
  for (const DeviceStepRecord& d : step->second.devices) {
    if (std::find(ranks.begin(), ranks.end(), d.rank) != ranks.end()) values.push_back(&d);
  }
  return values;
}

void MareyModel::AddPixelMap() {
  const size_t n = rows_.size();
  std::vector<std::array<double, 3>> values(n, {-1, -1, -1});
  std::array<double, 3> top = {0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    const auto devices = StepValues(i);
    if (devices.empty()) continue;
    for (int c = 0; c < 3; ++c) {
      std::vector<double> v;
      for (const DeviceStepRecord* d : devices) {
        v.push_back(c == 0   ? static_cast<double>(d->flops)
                    : c == 1 ? d->flops_per_second
                             : static_cast<double>(d->peak_memory_bytes));
      }
      double x = 0;
      switch (rows_[i].kind) {
        case RowKind::kGroupMin:
          x = *std::min_element(v.begin(), v.end());
          break;
        case RowKind::kGroupMax:
          x = *std::max_element(v.begin(), v.end());
          break;
        default:
          x = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      }
      values[i][c] = x;
      top[c] = std::max(top[c], x);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const float y = plot_.y + pitch_ * static_cast<float>(i);
    const float h = pitch_ >= 4 ? pitch_ - 1 : pitch_;
    for (int c = 0; c < 3; ++c) {
      const float x = plot_.x + plot_.w + kPixelMapGap + kPixelMapColumn * static_cast<float>(c);
      const Color color = values[i][c] < 0 ? Rgba(235, 235, 235)
                          : top[c] <= 0
                              ? Rgba(245, 247, 252)
                              : Lerp(Rgba(241, 245, 252), kPixelMapHigh, values[i][c] / top[c]);
      list_.rects.push_back({{x, y, kPixelMapColumn - 2, h}, color});
    }
  }
}

void MareyModel::AddLineCharts(size_t index, float axis_y, float height) {
  const Row& row = rows_[index];
  if (row.kind != RowKind::kDevice || steps_.empty()) return;
  const Track* track = RowTrack(index);
  const int64_t shift = raw_ && track != nullptr ? track->raw_base : 0;
  // Scaled between the smallest and largest value over all devices, so a
  // device that differs stands out even when every value is large.
  double min_flops = 1e300, max_flops = 0, min_memory = 1e300, max_memory = 0;
  for (const auto& [number, step] : steps_) {
    for (const DeviceStepRecord& d : step.devices) {
      min_flops = std::min(min_flops, static_cast<double>(d.flops));
      max_flops = std::max(max_flops, static_cast<double>(d.flops));
      min_memory = std::min(min_memory, static_cast<double>(d.peak_memory_bytes));
      max_memory = std::max(max_memory, static_cast<double>(d.peak_memory_bytes));
    }
  }
  auto scaled = [](double v, double low, double high) {
    return high > low ? 0.15 + 0.85 * (v - low) / (high - low) : 0.5;
  };
  const float base = axis_y - band_half_ - 3;
  const float span = std::max(4.0f, height * 0.4f - band_half_ - 6);
  Polyline flops{{}, kFlopsLineColor, 1.3f};
  Polyline memory{{}, kMemoryLineColor, 1.3f, true};
  for (const auto& [number, step] : steps_) {
    if (step.end_ns + shift < view_start_ || step.start_ns + shift > view_end_) continue;
    for (const DeviceStepRecord& d : step.devices) {
      if (d.rank != row.rank) continue;
      const float x0 = std::clamp(TimeToX(d.start_ns + shift), plot_.x, plot_.x + plot_.w);
      const float x1 = std::clamp(TimeToX(d.end_ns + shift), plot_.x, plot_.x + plot_.w);
      if (max_flops > 0) {
        const float y = base - span * static_cast<float>(scaled(d.flops, min_flops, max_flops));
        flops.points.push_back({x0, y});
        flops.points.push_back({x1, y});
      }
      if (max_memory > 0) {
        const float y =
            base - span * static_cast<float>(scaled(d.peak_memory_bytes, min_memory, max_memory));
        memory.points.push_back({x0, y});
        memory.points.push_back({x1, y});
      }
    }
  }
  if (flops.points.size() >= 2) list_.polylines.push_back(std::move(flops));
  if (memory.points.size() >= 2) list_.polylines.push_back(std::move(memory));
}

std::string MareyModel::DescribeRowAlerts(size_t index) const {
  std::vector<uint32_t> ranks;
  const Row& row = rows_[index];
  if (row.kind == RowKind::kDevice) {
    ranks.push_back(row.rank);
  } else if (auto group = groups_.find(row.group_key); group != groups_.end()) {
    ranks = group->second->ranks;
  }
  std::string text;
  for (uint32_t rank : ranks) {
    auto it = alerts_by_rank_.find(rank);
    if (it == alerts_by_rank_.end()) continue;
    for (const Alert* alert : it->second) {
      if (!text.empty()) text += "\n";
      text += "step " + std::to_string(alert->step) + ", rank " + std::to_string(rank) + ": " +
              (alert->text.empty() ? alert->rule : alert->text);
    }
  }
  return text;
}

std::optional<MareyModel::Hit> MareyModel::HitTest(float x, float y) {
  if (layout_dirty_) Layout();
  if (rows_.empty() || y < plot_.y || y >= plot_.y + plot_.h) return std::nullopt;
  const size_t index =
      std::min(rows_.size() - 1, static_cast<size_t>((y - plot_.y) / std::max(pitch_, 1e-3f)));
  const Row& row = rows_[index];
  Hit hit;
  hit.row = index;
  hit.row_label = row.label;
  hit.group_key = row.group_key;
  const float map_x = plot_.x + plot_.w + kPixelMapGap;
  if (x >= map_x && x < map_x + 3 * kPixelMapColumn) {
    hit.kind = Hit::Kind::kPixelMap;
    const auto devices = StepValues(index);
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
  if (row.has_alert && std::fabs(x - (plot_.x - 9)) <= 8) {
    hit.kind = Hit::Kind::kAlert;
    hit.text = DescribeRowAlerts(index);
    return hit;
  }
  if (x < plot_.x - 2) {
    hit.kind = Hit::Kind::kRowLabel;
    if (!row.group_key.empty() && row.kind != RowKind::kDevice) {
      auto group = groups_.find(row.group_key);
      std::string ranks;
      if (group != groups_.end()) {
        for (uint32_t r : group->second->ranks) {
          ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      hit.text = row.group_key + ": ranks " + ranks + "\nclick to " +
                 (row.expanded ? "collapse" : "expand");
    } else {
      const DeviceInfo& info = device_info_[row.rank];
      hit.text = row.label + "\nstage " + std::to_string(info.stage) +
                 (info.host.empty() ? "" : ", host " + info.host);
    }
    return hit;
  }
  if (x < plot_.x || x > plot_.x + plot_.w) return std::nullopt;
  const Track* track = RowTrack(index);
  if (track == nullptr) return std::nullopt;
  const int64_t t = XToTime(x);
  const int64_t tolerance =
      std::max<int64_t>(1, static_cast<int64_t>(3.0 * (view_end_ - view_start_) / plot_.w));
  auto find = [&](const std::vector<Op>& ops, int64_t max_duration) -> const Op* {
    auto first_after = std::partition_point(
        ops.begin(), ops.end(), [&](const Op& op) { return OpStart(*track, op) <= t + tolerance; });
    const Op* best = nullptr;
    for (auto it = first_after; it != ops.begin();) {
      --it;
      const int64_t s = OpStart(*track, *it);
      if (s < t - tolerance - max_duration - (raw_ ? 1'000'000 : 0)) break;
      const int64_t e = OpEnd(*track, *it);
      if (e < t - tolerance) continue;
      if (best == nullptr || e - s < best->end - best->start) best = &*it;
    }
    return best;
  };
  auto describe = [&](const Op& op) {
    hit.kind = Hit::Kind::kOperator;
    hit.op = names_->Name(op.name);
    hit.op_class = op.cls;
    hit.start_ns = OpStart(*track, op);
    hit.duration_ns = op.end - op.start;
    hit.step = op.step;
    std::string where = row.kind == RowKind::kDevice
                            ? row.label
                            : row.group_key + " (" + RowKindSuffix(row.kind) + " over its devices)";
    hit.text = (hit.op.empty() ? std::string("(unnamed)") : hit.op) + "\n" + OpClassName(op.cls) +
               " on " + where +
               "\nstart: " + FormatOffset(static_cast<double>(hit.start_ns - origin_ns())) +
               "\nduration: " + FormatDuration(static_cast<double>(hit.duration_ns)) +
               "\nstep: " + std::to_string(op.step);
    return hit;
  };
  if (const Op* op = find(track->comm, track->max_comm)) return describe(*op);
  const double bin_ns = static_cast<double>(view_end_ - view_start_) / options_.bins;
  const int64_t bin = static_cast<int64_t>((t - view_start_) / bin_ns);
  if (bin >= 0 && bin < static_cast<int64_t>(options_.bins) && row_merged_[index][bin]) {
    const int64_t b0 = view_start_ + static_cast<int64_t>(bin_ns * bin);
    const int64_t b1 = view_start_ + static_cast<int64_t>(bin_ns * (bin + 1));
    auto at = [&](int64_t time) {
      return static_cast<size_t>(
          std::partition_point(track->compute.begin(), track->compute.end(),
                               [&](const Op& op) { return OpStart(*track, op) < time; }) -
          track->compute.begin());
    };
    const size_t a = at(b0), b = at(b1);
    hit.kind = Hit::Kind::kMergedBin;
    hit.op_class = OpClass::kCompute;
    hit.merged_operators = static_cast<uint32_t>(b - a);
    hit.busy_ns = track->busy_prefix[b] - track->busy_prefix[a];
    hit.start_ns = b0;
    hit.duration_ns = b1 - b0;
    if (b > a) hit.step = track->compute[a].step;
    hit.text = std::to_string(hit.merged_operators) + " compute operators merged on " + row.label +
               "\nbin: " + FormatOffset(static_cast<double>(b0 - origin_ns())) + " .. " +
               FormatOffset(static_cast<double>(b1 - origin_ns())) +
               "\nbusy: " + FormatDuration(static_cast<double>(hit.busy_ns)) +
               "\nzoom in to see each one";
    return hit;
  }
  if (const Op* op = find(track->compute, track->max_compute)) return describe(*op);
  return std::nullopt;
}

}  // namespace trainscope::viewer
