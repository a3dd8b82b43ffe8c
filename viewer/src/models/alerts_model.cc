#include "trainscope/viewer/alerts_model.h"

#include <cstdio>

#include "trainscope/viewer/units.h"

namespace trainscope::viewer {
namespace {

// The collector's metrics carry their unit in their name.
std::string Number(const std::string& metric, double value) {
  auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return metric.size() >= s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("_ns")) return FormatDuration(value);
  if (ends_with("_fraction")) return std::to_string(static_cast<int>(value * 100 + 0.5)) + " %";
  if (metric == "flops_per_second") return FormatFlops(value, /*per_second=*/true);
  if (metric == "bytes_per_second") return FormatBytes(value) + "/s";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", value);
  return buffer;
}

}  // namespace

AlertsModel::AlertsModel(size_t max_alerts) : max_alerts_(max_alerts == 0 ? 1 : max_alerts) {}

void AlertsModel::Add(const Alert& alert) {
  alerts_.push_back(alert);
  while (alerts_.size() > max_alerts_) alerts_.pop_front();
  if (selected_row_.has_value()) ++*selected_row_;  // rows are newest first
  ++version_;
}

void AlertsModel::Clear() {
  alerts_.clear();
  selected_row_.reset();
  ++version_;
}

const Alert* AlertsModel::AtRow(size_t row) const {
  if (row >= alerts_.size()) return nullptr;
  return &alerts_[alerts_.size() - 1 - row];
}

std::vector<AlertsModel::Row> AlertsModel::Rows() const {
  std::vector<Row> rows;
  rows.reserve(alerts_.size());
  for (auto it = alerts_.rbegin(); it != alerts_.rend(); ++it) {
    Row row;
    row.step = std::to_string(it->step);
    row.rule = it->rule;
    for (uint32_t rank : it->ranks)
      row.ranks += (row.ranks.empty() ? "" : ", ") + std::to_string(rank);
    row.op = it->op;
    row.value = it->metric + ": " + Number(it->metric, it->value) + " (baseline " +
                Number(it->metric, it->baseline) + ")";
    row.text = it->text;
    rows.push_back(std::move(row));
  }
  return rows;
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
