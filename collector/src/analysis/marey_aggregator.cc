#include "trainscope/collector/analysis/marey_aggregator.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;

// Union length of [start, end) intervals (reordered).
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>>& v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  int64_t total = 0;
  int64_t lo = v.front().first, hi = v.front().second;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].first <= hi) {
      hi = std::max(hi, v[i].second);
    } else {
      total += hi - lo;
      lo = v[i].first;
      hi = v[i].second;
    }
  }
  return total + (hi - lo);
}

struct OperatorKey {
  uint64_t step;
  uint32_t name;
  uint32_t occurrence;
  bool operator==(const OperatorKey& o) const {
    return step == o.step && name == o.name && occurrence == o.occurrence;
  }
  template <typename H>
  friend H AbslHashValue(H h, const OperatorKey& k) {
    return H::combine(std::move(h), k.step, k.name, k.occurrence);
  }
};

// One operator over a group's devices; sums are relative to `base` so that
// Unix-epoch nanoseconds of many devices do not overflow.
struct Aggregate {
  v1::OperatorClass op_class = v1::OPERATOR_CLASS_UNSPECIFIED;
  int64_t base = 0;
  int64_t min_start = 0, max_start = 0, sum_start = 0;
  int64_t min_end = 0, max_end = 0, sum_end = 0;
  uint32_t devices = 0;

  void Add(const OperatorRecord& op, bool raw) {
    const int64_t start = op.Start(raw), end = op.End(raw);
    if (devices == 0) {
      op_class = op.op_class;
      base = start;
      min_start = max_start = start;
      min_end = max_end = end;
    }
    min_start = std::min(min_start, start);
    max_start = std::max(max_start, start);
    min_end = std::min(min_end, end);
    max_end = std::max(max_end, end);
    sum_start += start - base;
    sum_end += end - base;
    ++devices;
  }
  int64_t avg_start() const { return base + sum_start / devices; }
  int64_t avg_end() const { return base + sum_end / devices; }
};

struct Row {
  std::string key;
  std::vector<uint32_t> ranks;
  absl::flat_hash_map<OperatorKey, Aggregate> operators;
};

}  // namespace

MareyAggregator::MareyAggregator(const OperatorStore* store, const JobStrings* strings,
                                 MareyAggregatorOptions options)
    : store_(store), strings_(strings), options_(options) {}

v1::MareyView MareyAggregator::Build(const v1::MareyQuery& query,
                                     const std::map<uint32_t, std::string>& hosts) const {
  v1::MareyView view;
  OperatorRange range;
  range.start_ns = query.start_ns();
  range.end_ns = query.end_ns();
  range.ranks.assign(query.ranks().begin(), query.ranks().end());
  range.raw_timestamps = query.raw_timestamps();
  if (!range.everything() && range.end_ns < range.start_ns) return view;
  const auto [start, end] = range.everything()
                                ? store_->Extent(range.raw_timestamps)
                                : std::pair<int64_t, int64_t>(range.start_ns, range.end_ns);
  view.set_start_ns(start);
  view.set_end_ns(end);
  const uint32_t max_operators =
      query.max_operators() != 0 ? query.max_operators() : options_.default_max_operators;
  if (query.grouping() != v1::MAREY_GROUPING_NONE) {
    BuildRows(range, query.grouping(), hosts, max_operators, &view);
  } else if (query.bins() == 0) {
    BuildRaw(range, max_operators, &view);
  } else {
    BuildBins(range, std::min(query.bins(), options_.max_bins), max_operators, &view);
  }
  return view;
}

void MareyAggregator::BuildRaw(const OperatorRange& range, uint32_t max_operators,
                               v1::MareyView* view) const {
  OperatorBatchBuilder out(strings_, view->mutable_operators());
  uint32_t added = 0;
  store_->ForEach(range, [&](const OperatorRecord& op) {
    if (added >= max_operators) {
      view->set_truncated(true);
      return;
    }
    out.Add(op);
    ++added;
  });
}

void MareyAggregator::BuildBins(const OperatorRange& range, uint32_t bins, uint32_t max_operators,
                                v1::MareyView* view) const {
  OperatorBatchBuilder out(strings_, view->mutable_operators());
  std::vector<const OperatorRecord*> device;
  store_->ForEach(range, [&](const OperatorRecord& op) {
    if (!device.empty() && device.front()->rank != op.rank) {
      BinDevice(device, range.raw_timestamps, bins, max_operators, &out, view);
      device.clear();
    }
    device.push_back(&op);
  });
  if (!device.empty()) BinDevice(device, range.raw_timestamps, bins, max_operators, &out, view);
}

void MareyAggregator::BinDevice(const std::vector<const OperatorRecord*>& ops, bool raw,
                                uint32_t bins, uint32_t max_operators, OperatorBatchBuilder* out,
                                v1::MareyView* view) const {
  const int64_t view_start = view->start_ns();
  const int64_t span = std::max<int64_t>(1, view->end_ns() - view_start);
  const int64_t width = std::max<int64_t>(1, (span + bins - 1) / bins);
  const auto bin_of = [&](const OperatorRecord& op) {
    return static_cast<uint32_t>(
        std::clamp<int64_t>((op.Start(raw) - view_start) / width, 0, bins - 1));
  };
  std::vector<uint32_t> counts(bins, 0);
  uint64_t compute = 0;
  for (const OperatorRecord* op : ops) {
    if (!op->is_compute()) continue;
    ++counts[bin_of(*op)];
    ++compute;
  }
  const uint32_t non_empty = static_cast<uint32_t>(
      std::count_if(counts.begin(), counts.end(), [](uint32_t c) { return c > 0; }));
  // Dense: more compute operators than the mean of the non-empty bins
  // (count * non_empty > compute avoids rounding the mean).
  std::vector<int32_t> merged(bins, -1);  // bin -> index into view->bins
  struct Pending {
    std::vector<std::pair<int64_t, int64_t>> intervals;
  };
  std::map<uint32_t, Pending> pending;
  const auto add_individual = [&](const OperatorRecord& op) {
    if (static_cast<uint32_t>(view->operators().operators_size()) >= max_operators) {
      view->set_truncated(true);
      return;
    }
    out->Add(op);
  };
  for (const OperatorRecord* op : ops) {
    if (!op->is_compute()) {
      add_individual(*op);
      continue;
    }
    const uint32_t bin = bin_of(*op);
    if (static_cast<uint64_t>(counts[bin]) * non_empty <= compute) {
      add_individual(*op);
      continue;
    }
    if (merged[bin] < 0) {
      merged[bin] = view->bins_size();
      v1::MareyBin* b = view->add_bins();
      b->set_rank(op->rank);
      b->set_start_ns(op->Start(raw));
      b->set_end_ns(op->End(raw));
    }
    v1::MareyBin* b = view->mutable_bins(merged[bin]);
    b->set_start_ns(std::min(b->start_ns(), op->Start(raw)));
    b->set_end_ns(std::max(b->end_ns(), op->End(raw)));
    b->set_operators(b->operators() + 1);
    b->set_flops(b->flops() + op->flops);
    pending[bin].intervals.emplace_back(op->Start(raw), op->End(raw));
  }
  for (auto& [bin, p] : pending)
    view->mutable_bins(merged[bin])->set_busy_ns(UnionLength(p.intervals));
}

void MareyAggregator::BuildRows(const OperatorRange& range, v1::MareyGrouping grouping,
                                const std::map<uint32_t, std::string>& hosts,
                                uint32_t max_operators, v1::MareyView* view) const {
  const bool raw = range.raw_timestamps;
  // Ordered: stages by number, hosts by name.
  std::map<std::pair<uint32_t, std::string>, Row> rows;
  absl::flat_hash_map<uint32_t, uint32_t> occurrences;
  store_->ForEachDeviceStep(range, [&](uint32_t rank, uint64_t step,
                                       absl::Span<const OperatorRecord> ops) {
    std::pair<uint32_t, std::string> key;
    if (grouping == v1::MAREY_GROUPING_STAGE) {
      key.first = ops.front().stage;
    } else {
      auto host = hosts.find(rank);
      key.second = host != hosts.end() && !host->second.empty() ? host->second : "unknown";
    }
    Row& row = rows[key];
    if (row.key.empty()) {
      row.key = grouping == v1::MAREY_GROUPING_STAGE ? absl::StrCat("stage ", key.first)
                                                     : absl::StrCat("host ", key.second);
    }
    if (row.ranks.empty() || row.ranks.back() != rank) row.ranks.push_back(rank);
    occurrences.clear();
    for (const OperatorRecord& op : ops) {
      const uint32_t occurrence = occurrences[op.name]++;
      if (!range.everything() && (op.End(raw) < range.start_ns || op.Start(raw) > range.end_ns)) {
        continue;
      }
      row.operators[OperatorKey{step, op.name, occurrence}].Add(op, raw);
    }
  });

  OperatorBatchBuilder names(strings_, view->mutable_operators());
  uint32_t added = 0;
  for (auto& [key, row] : rows) {
    v1::MareyRow* out = view->add_rows();
    out->set_key(row.key);
    std::sort(row.ranks.begin(), row.ranks.end());
    row.ranks.erase(std::unique(row.ranks.begin(), row.ranks.end()), row.ranks.end());
    for (uint32_t r : row.ranks) out->add_ranks(r);
    std::vector<std::pair<const OperatorKey*, const Aggregate*>> ordered;
    ordered.reserve(row.operators.size());
    for (const auto& [k, agg] : row.operators) ordered.emplace_back(&k, &agg);
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
      return std::make_tuple(a.second->avg_start(), a.first->step, a.first->name,
                             a.first->occurrence) < std::make_tuple(b.second->avg_start(),
                                                                    b.first->step, b.first->name,
                                                                    b.first->occurrence);
    });
    for (const auto& [k, agg] : ordered) {
      if (added >= max_operators) {
        view->set_truncated(true);
        break;
      }
      ++added;
      v1::AggregatedOperator* op = out->add_operators();
      op->set_name(names.Intern(k->name));
      op->set_op_class(agg->op_class);
      op->set_step(k->step);
      op->set_min_start_ns(agg->min_start);
      op->set_avg_start_ns(agg->avg_start());
      op->set_max_start_ns(agg->max_start);
      op->set_min_end_ns(agg->min_end);
      op->set_avg_end_ns(agg->avg_end());
      op->set_max_end_ns(agg->max_end);
      op->set_devices(agg->devices);
    }
  }
}

}  // namespace trainscope::collector
