#include "trainscope/viewer/top_operators.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "trainscope/base/statistics.h"

namespace trainscope::viewer {
namespace {

struct Accumulator {
  TopOperators::Row row;
  std::vector<int64_t> durations;
  int64_t last_rank = -1;  // the last device added to row.ranks
};

}  // namespace

std::vector<int64_t> TopOperators::SelfTimes(const std::vector<const MareyTrack::Op*>& ops) {
  std::vector<size_t> order(ops.size());
  std::iota(order.begin(), order.end(), 0);
  // Parents before their children: by start, the longer first; equal
  // intervals keep their order (the first one is the parent).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops[a]->start != ops[b]->start ? ops[a]->start < ops[b]->start
                                          : ops[a]->end > ops[b]->end;
  });
  std::vector<int64_t> children(ops.size(), 0);
  std::vector<int64_t> covered_until(ops.size(), INT64_MIN);
  std::vector<size_t> open;  // operators that may still hold the next one
  for (size_t i : order) {
    const MareyTrack::Op& op = *ops[i];
    // An open operator that ends before this one does not contain it (it
    // ended, or the two only overlap: threads on one row).
    while (!open.empty() && ops[open.back()]->end < op.end) open.pop_back();
    if (!open.empty()) {
      const size_t parent = open.back();
      // The union of the direct children: siblings that overlap count once.
      const int64_t from = std::max(op.start, covered_until[parent]);
      children[parent] += std::max<int64_t>(0, op.end - from);
      covered_until[parent] = std::max(covered_until[parent], op.end);
    }
    open.push_back(i);
  }
  std::vector<int64_t> self(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    self[i] = std::max<int64_t>(0, ops[i]->end - ops[i]->start - children[i]);
  }
  return self;
}

void TopOperators::Compute(const MareyTrackStore& store, const NameTable& names,
                           std::optional<StepSpan> span, int64_t range_device_ns) {
  std::unordered_map<uint64_t, Accumulator> by_key;
  std::vector<const MareyTrack::Op*> ops;
  auto add_track = [&](const MareyTrack& track) {
    ops.clear();
    for (const std::vector<MareyTrack::Op>* list : {&track.compute, &track.comm}) {
      for (const MareyTrack::Op& op : *list) {
        if (!span.has_value() || span->Contains(op.step)) ops.push_back(&op);
      }
    }
    const std::vector<int64_t> self = SelfTimes(ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      const MareyTrack::Op& op = *ops[i];
      Accumulator& acc =
          by_key[(static_cast<uint64_t>(op.name) << 8) | static_cast<uint64_t>(op.cls)];
      acc.row.name_id = op.name;
      acc.row.op_class = op.cls;
      ++acc.row.calls;
      acc.row.total_ns += op.end - op.start;
      acc.row.self_ns += self[i];
      acc.durations.push_back(op.end - op.start);
      if (acc.last_rank != static_cast<int64_t>(track.rank)) {
        acc.last_rank = track.rank;
        acc.row.ranks.push_back(track.rank);
      }
    }
  };
  // Devices in rank order, then their streams in rank order: a key meets
  // its devices in ascending order, so noting rank changes lists each once
  // (CPU and GPU classes never share a key).
  for (const auto& [rank, track] : store.devices()) add_track(*track);
  for (const auto& [rank, lanes] : store.streams()) {
    for (const auto& [lane, track] : lanes) add_track(*track);
  }
  rows_.clear();
  rows_.reserve(by_key.size());
  for (auto& [key, acc] : by_key) {
    Row row = std::move(acc.row);
    row.name = names.Name(row.name_id);
    std::sort(acc.durations.begin(), acc.durations.end());
    row.mean_ns = static_cast<double>(row.total_ns) / static_cast<double>(row.calls);
    row.p50_ns = base::QuantileOfSorted(acc.durations, 0.5);
    row.p95_ns = base::QuantileOfSorted(acc.durations, 0.95);
    row.share = range_device_ns > 0
                    ? static_cast<double>(row.self_ns) / static_cast<double>(range_device_ns)
                    : 0;
    rows_.push_back(std::move(row));
  }
  SortBy(column_, descending_);
}

void TopOperators::SortBy(Column column, bool descending) {
  column_ = column;
  descending_ = descending;
  auto value = [column](const Row& r) -> double {
    switch (column) {
      case Column::kCalls:
        return static_cast<double>(r.calls);
      case Column::kRanks:
        return static_cast<double>(r.ranks.size());
      case Column::kTotal:
        return static_cast<double>(r.total_ns);
      case Column::kSelf:
        return static_cast<double>(r.self_ns);
      case Column::kMean:
        return r.mean_ns;
      case Column::kP50:
        return r.p50_ns;
      case Column::kP95:
        return r.p95_ns;
      case Column::kShare:
        return r.share;
      case Column::kName:
      case Column::kClass:
        return 0;
    }
    return 0;
  };
  // -1, 0 or 1 on the chosen column; ties by name, then class (always
  // ascending), so the order never depends on the hash map's.
  auto compare = [&](const Row& a, const Row& b) {
    if (column == Column::kName) return a.name.compare(b.name);
    if (column == Column::kClass) {
      return a.op_class == b.op_class ? 0 : a.op_class < b.op_class ? -1 : 1;
    }
    const double va = value(a), vb = value(b);
    return va == vb ? 0 : va < vb ? -1 : 1;
  };
  std::sort(rows_.begin(), rows_.end(), [&](const Row& a, const Row& b) {
    const int c = compare(a, b);
    if (c != 0) return descending ? c > 0 : c < 0;
    return std::tie(a.name, a.op_class) < std::tie(b.name, b.op_class);
  });
}

int TopOperators::Find(uint32_t name_id) const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].name_id == name_id) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace trainscope::viewer
