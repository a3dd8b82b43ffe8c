// MareyModel's private pieces shared by its two source files
// (marey_model.cc: data, rows, hit tests; marey_layout.cc: a frame's layout):
// the operator tracks, groups and row layouts, and the drawing constants.
// Private to the models library.
#ifndef TRAINSCOPE_VIEWER_SRC_MODELS_MAREY_MODEL_INTERNAL_H_
#define TRAINSCOPE_VIEWER_SRC_MODELS_MAREY_MODEL_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trainscope/viewer/marey_model.h"

namespace trainscope::viewer {
namespace marey_internal {

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

inline uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t Mix(uint64_t h, uint64_t v) { return SplitMix(h ^ SplitMix(v)); }

inline Color ClassColor(OpClass c) {
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

inline Color Lerp(Color a, Color b, double f) {
  f = std::clamp(f, 0.0, 1.0);
  auto channel = [&](int shift) {
    const double x = ((a >> shift) & 0xFF) * (1 - f) + ((b >> shift) & 0xFF) * f;
    return static_cast<uint32_t>(std::lround(x)) << shift;
  };
  return channel(24) | channel(16) | channel(8) | channel(0);
}

inline const char* RowKindSuffix(MareyModel::RowKind kind) {
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

}  // namespace marey_internal

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

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_SRC_MODELS_MAREY_MODEL_INTERNAL_H_
