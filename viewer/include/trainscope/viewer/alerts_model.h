// The live list of alerts, newest first, and what selecting one does to the
// other views: the selection pins the alert's step, and the Marey graph
// zooms to the alert's operator in that step and highlights its devices.
//
// Usage:
//   AlertsModel alerts;
//   alerts.Add(alert);
//   marey.SetAlerts(alerts.alerts());
//   alerts.Select(row, &selection, &marey);   // a click in the list
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_ALERTS_MODEL_H_
#define TRAINSCOPE_VIEWER_ALERTS_MODEL_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/marey_model.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/selection_state.h"

namespace trainscope::viewer {

class AlertsModel {
 public:
  struct Row {
    std::string step;
    std::string rule;
    std::string ranks;
    std::string op;
    std::string value;  // "metric: value (baseline b)"
    std::string text;
  };

  explicit AlertsModel(size_t max_alerts = 10'000);

  void Add(const Alert& alert);
  void Clear();
  // Newest first.
  std::vector<Row> Rows() const;
  // The alerts in arrival order (for MareyModel::SetAlerts).
  std::vector<Alert> alerts() const { return {alerts_.begin(), alerts_.end()}; }
  size_t size() const { return alerts_.size(); }
  // The alert shown in `row` (newest first), if any.
  const Alert* AtRow(size_t row) const;
  // Applies a click on `row`: pins the step and focuses the Marey graph.
  // Returns the alert, or nullptr for a row that does not exist.
  const Alert* Select(size_t row, SelectionState* selection, MareyModel* marey);
  std::optional<size_t> selected_row() const { return selected_row_; }
  uint64_t version() const { return version_; }

 private:
  size_t max_alerts_;
  std::deque<Alert> alerts_;
  std::optional<size_t> selected_row_;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_ALERTS_MODEL_H_
