#include "trainscope/viewer/alerts_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The collector's metrics carry their unit in their name.
std::string Number(const std::string& metric, double value) {
  if (EndsWith(metric, "_ns")) return FormatDuration(value);
  if (EndsWith(metric, "_ms")) return FormatDuration(value * 1e6);  // the synthetic job's
  if (EndsWith(metric, "_fraction"))
    return std::to_string(static_cast<int>(value * 100 + 0.5)) + " %";
  if (metric == "flops_per_second") return FormatFlops(value, /*per_second=*/true);
  if (metric == "flops") return FormatFlops(value, /*per_second=*/false);
  if (metric == "bytes_per_second") return FormatBytes(value) + "/s";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", value);
  return buffer;
}

std::string JoinRanks(const std::vector<uint32_t>& ranks, size_t from) {
  std::string out;
  for (size_t i = from; i < ranks.size(); ++i) {
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
  }
  return out;
}

bool Matches(const Alert& alert, const AlertsModel::Filter& filter) {
  if (!filter.rule.empty() && alert.rule != filter.rule) return false;
  if (filter.kind.has_value() && AlertsModel::KindOf(alert) != *filter.kind) return false;
  if (filter.rank.has_value() &&
      std::find(alert.ranks.begin(), alert.ranks.end(), *filter.rank) == alert.ranks.end()) {
    return false;
  }
  return true;
}

}  // namespace

AlertsModel::AlertsModel(size_t max_alerts) : max_alerts_(max_alerts == 0 ? 1 : max_alerts) {}

AlertsModel::Kind AlertsModel::KindOf(const Alert& alert) {
  return alert.item.has_value() || alert.rule == "difficult_item" ? Kind::kItem
                                                                  : Kind::kPerformance;
}

std::string AlertsModel::MetricName(const std::string& metric) {
  struct Known {
    const char* metric;
    const char* name;
  };
  static const Known kKnown[] = {
      {"own_ns", "own time"},
      {"step_time_ns", "step time"},
      {"compute_ns", "compute time"},
      {"data_wait_ns", "data wait"},
      {"copy_stall_ns", "copy stall"},
      {"bubble_ns", "pipeline bubble"},
      {"gpu_idle_launch_bound_ns", "GPU idle (launch-bound)"},
      {"wait_fraction", "wait share"},
      {"flops", "FLOPs"},
      {"flops_per_second", "FLOP/s"},
      {"bytes_per_second", "link bandwidth"},
      {"kernel_time_ratio", "kernel time ratio"},
  };
  for (const Known& known : kKnown) {
    if (metric == known.metric) return known.name;
  }
  std::string name = metric;
  if (EndsWith(name, "_ns") || EndsWith(name, "_ms"))
    name = name.substr(0, name.size() - 3) + " time";
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

void AlertsModel::Add(const Alert& alert) {
  if (alert.state == AlertState::kCleared && alert.alert_id != 0) {
    // A clear closes its raise's row; the newest raise with that id is the one.
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (it->raised.alert_id == alert.alert_id && !it->cleared.has_value()) {
        it->cleared = alert;
        newest_step_ = std::max(newest_step_, alert.step);
        ++version_;
        return;
      }
    }
    // Its raise is gone (bounded list, history cut): the clear stands alone.
  }
  Entry entry;
  entry.raised = alert;
  if (alert.state == AlertState::kCleared) entry.cleared = alert;
  entries_.push_back(std::move(entry));
  newest_step_ = std::max(newest_step_, alert.step);
  while (entries_.size() > max_alerts_) entries_.pop_front();
  if (selected_row_.has_value()) ++*selected_row_;  // rows are newest first
  ++version_;
}

void AlertsModel::Clear() {
  entries_.clear();
  selected_row_.reset();
  newest_step_ = 0;
  ++version_;
}

void AlertsModel::SetSelectedRanks(const std::set<uint32_t>& ranks) {
  if (ranks == selected_ranks_) return;
  selected_ranks_ = ranks;
  ++version_;
}

void AlertsModel::SetNewestStep(uint64_t step) {
  if (step <= newest_step_) return;
  newest_step_ = step;
  // Only open alerts' durations change.
  for (const Entry& entry : entries_) {
    if (!entry.cleared.has_value()) {
      ++version_;
      break;
    }
  }
}

const Alert* AlertsModel::AtRow(size_t row) const {
  if (row >= entries_.size()) return nullptr;
  return &entries_[entries_.size() - 1 - row].raised;
}

std::vector<Alert> AlertsModel::open_alerts() const {
  std::vector<Alert> out;
  for (const Entry& entry : entries_) {
    if (!entry.cleared.has_value()) out.push_back(entry.raised);
  }
  return out;
}

AlertsModel::Row AlertsModel::MakeRow(const Entry& entry, size_t index) const {
  const Alert& a = entry.raised;
  Row row;
  row.index = index;
  row.kind = KindOf(a);
  row.cleared = entry.cleared.has_value();
  row.selected_devices = std::any_of(a.ranks.begin(), a.ranks.end(),
                                     [&](uint32_t r) { return selected_ranks_.count(r) != 0; });
  row.state = row.cleared ? "cleared" : "raised";
  row.step = std::to_string(a.step);
  const uint64_t from = a.onset_step != 0 && a.onset_step < a.step ? a.onset_step : a.step;
  if (row.cleared) {
    const Alert& c = *entry.cleared;
    const uint64_t steps = c.step > from ? c.step - from : 0;
    row.duration = "steps " + std::to_string(from) + "\xE2\x80\x93" + std::to_string(c.step) +
                   " (" + std::to_string(steps) + (steps == 1 ? " step" : " steps");
    if (a.changed_unix_ns > 0 && c.changed_unix_ns > a.changed_unix_ns) {
      row.duration +=
          ", " + FormatDuration(static_cast<double>(c.changed_unix_ns - a.changed_unix_ns));
    }
    row.duration += ")";
  } else {
    row.duration = "open since step " + std::to_string(from);
    if (newest_step_ > from) {
      const uint64_t steps = newest_step_ - from;
      row.duration += " (" + std::to_string(steps) + (steps == 1 ? " step)" : " steps)");
    }
  }
  row.rule = a.rule;
  if (a.cause >= 0) {
    row.ranks = std::to_string(a.cause) + " (cause)";
    std::vector<uint32_t> others;
    for (uint32_t r : a.ranks) {
      if (static_cast<int64_t>(r) != a.cause) others.push_back(r);
    }
    if (!others.empty()) row.ranks += "; also " + JoinRanks(others, 0);
  } else if (a.ranks.size() > 1) {
    row.ranks = JoinRanks(a.ranks, 0) + " (no single cause)";
  } else {
    row.ranks = JoinRanks(a.ranks, 0);
  }
  row.op = a.op;
  if (!a.metric.empty()) {
    row.value = MetricName(a.metric) + " " + Number(a.metric, a.value) + " (baseline " +
                Number(a.metric, a.baseline);
    // The change as a percentage, unless the metric is one already.
    if (a.baseline != 0 && std::isfinite(a.value) && !EndsWith(a.metric, "_fraction")) {
      char change[32];
      std::snprintf(change, sizeof(change), ", %+.0f %%", (a.value / a.baseline - 1) * 100);
      row.value += change;
    }
    row.value += ")";
  }
  row.text = a.text;
  row.details = (a.text.empty() ? a.rule : a.text) + "\n\n" + a.rule + ", " + row.state + ": " +
                row.duration + "\nranks: " + (row.ranks.empty() ? "none" : row.ranks);
  if (!row.op.empty()) row.details += "\noperator: " + row.op;
  if (!row.value.empty()) row.details += "\n" + row.value;
  if (a.item.has_value()) row.details += "\nitem: " + std::to_string(*a.item);
  if (a.caused_by_alert_id != 0) {
    row.details += "\nan effect of alert " + std::to_string(a.caused_by_alert_id);
  }
  return row;
}

std::vector<AlertsModel::Row> AlertsModel::Rows() const {
  std::vector<Row> rows;
  rows.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    rows.push_back(MakeRow(entries_[entries_.size() - 1 - i], i));
  }
  return rows;
}

std::vector<AlertsModel::Group> AlertsModel::Groups(const Filter& filter) const {
  Group groups[2];
  groups[0].kind = Kind::kPerformance;
  groups[1].kind = Kind::kItem;
  size_t open[2] = {0, 0};
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[entries_.size() - 1 - i];
    if (!Matches(entry.raised, filter)) continue;
    const int g = KindOf(entry.raised) == Kind::kItem ? 1 : 0;
    groups[g].rows.push_back(MakeRow(entry, i));
    open[g] += entry.cleared.has_value() ? 0 : 1;
  }
  std::vector<Group> out;
  for (int g = 0; g < 2; ++g) {
    if (groups[g].rows.empty()) continue;
    const size_t n = groups[g].rows.size();
    groups[g].title = std::string(g == 0 ? "Performance" : "Items (loss contribution)") + ": " +
                      std::to_string(n) + (n == 1 ? " alert, " : " alerts, ") +
                      std::to_string(open[g]) + " open";
    out.push_back(std::move(groups[g]));
  }
  return out;
}

std::vector<uint64_t> AlertsModel::AlertSteps() const {
  std::set<uint64_t> steps;
  for (const Entry& entry : entries_) {
    if (KindOf(entry.raised) == Kind::kPerformance) steps.insert(entry.raised.step);
  }
  return {steps.begin(), steps.end()};
}

std::vector<std::string> AlertsModel::Rules() const {
  std::set<std::string> rules;
  for (const Entry& entry : entries_) rules.insert(entry.raised.rule);
  return {rules.begin(), rules.end()};
}

std::vector<uint32_t> AlertsModel::Ranks() const {
  std::set<uint32_t> ranks;
  for (const Entry& entry : entries_)
    ranks.insert(entry.raised.ranks.begin(), entry.raised.ranks.end());
  return {ranks.begin(), ranks.end()};
}

const Alert* AlertsModel::Select(size_t row, SelectionState* selection, MareyModel* marey) {
  const Alert* alert = AtRow(row);
  if (alert == nullptr) return nullptr;
  selected_row_ = row;
  ++version_;
  if (selection != nullptr) selection->Pin(alert->step);
  if (marey != nullptr) marey->FocusOnAlert(*alert);
  return alert;
}

}  // namespace trainscope::viewer
