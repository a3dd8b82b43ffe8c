// The live list of alerts and what selecting one does to the other views:
// the selection pins the alert's step, and the Marey graph zooms to the
// alert's operator in that step and highlights its devices.
//
// A clear (same alert_id as its raise) does not add a row: it closes its
// raise's row, which then shows "cleared" and how long the alert lasted.
// Rows name metrics as people say them ("step time 88.1 ms"), the cause rank
// (or that there is none), and come in two groups, so that a flood of item
// alerts (difficult_item, from loss contribution) cannot bury the
// performance alerts. Filtering by rule, rank and kind happens here; the
// widget only shows the groups it gets.
//
// Usage:
//   AlertsModel alerts;
//   alerts.Add(alert);
//   marey.SetAlerts(alerts.open_alerts());
//   for (const AlertsModel::Group& g : alerts.Groups(filter)) ...
//   alerts.Select(row.index, &selection, &marey);   // a click in the list
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_ALERTS_MODEL_H_
#define TRAINSCOPE_VIEWER_ALERTS_MODEL_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainscope/viewer/marey_model.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/selection_state.h"

namespace trainscope::viewer {

class AlertsModel {
 public:
  // kItem: about one training item (difficult_item); kPerformance: the rest.
  enum class Kind : uint8_t { kPerformance, kItem };

  // Unset fields match every alert.
  struct Filter {
    std::string rule;              // empty: every rule
    std::optional<uint32_t> rank;  // alerts that involve this rank
    std::optional<Kind> kind;
  };

  struct Row {
    size_t index = 0;  // AtRow / Select index (newest first over all alerts)
    Kind kind = Kind::kPerformance;
    bool cleared = false;
    // Names a device selected in any view (linked selection): the list
    // tints the row.
    bool selected_devices = false;
    std::string state;     // "raised" / "cleared"
    std::string step;      // the raising step
    std::string duration;  // "open since step 31" / "steps 31–45 (14 steps, 1.4 s)"
    std::string rule;
    std::string ranks;  // "2 (cause); also 0, 1, 3" / "0, 1, 2, 3 (no single cause)"
    std::string op;
    std::string value;    // "step time 88.1 ms (baseline 55 ms, +60 %)"
    std::string text;     // the collector's sentence, in full
    std::string details;  // everything above, one fact a line, for the details pane
  };

  struct Group {
    Kind kind = Kind::kPerformance;
    std::string title;      // "Performance: 10 alerts, 3 open"
    std::vector<Row> rows;  // newest first
  };

  explicit AlertsModel(size_t max_alerts = 10'000);

  void Add(const Alert& alert);
  void Clear();
  // The newest closed step, for how long open alerts have lasted.
  void SetNewestStep(uint64_t step);
  // The devices selected in any view (SelectionState): rows of alerts that
  // name one of them have Row::selected_devices set.
  void SetSelectedRanks(const std::set<uint32_t>& ranks);
  // Every alert, newest first, unfiltered.
  std::vector<Row> Rows() const;
  // The alerts `filter` lets through: the performance group, then the item
  // group; a group with no rows is left out.
  std::vector<Group> Groups(const Filter& filter) const;
  // What the filters can offer: the rules and ranks seen, sorted.
  std::vector<std::string> Rules() const;
  std::vector<uint32_t> Ranks() const;
  // The steps that raised a performance alert, ascending, once each (for
  // OverviewModel::SetAlertSteps; item alerts are about data, not steps).
  std::vector<uint64_t> AlertSteps() const;
  // The raises no clear has closed, in arrival order: what the Marey graph's
  // crosses and the cluster views' red outlines mark (MareyModel::SetAlerts,
  // TopologyLayout::SetAlerts), so a device that recovered loses its mark.
  std::vector<Alert> open_alerts() const;
  size_t size() const { return entries_.size(); }
  // The alert shown in `row` (newest first), if any.
  const Alert* AtRow(size_t row) const;
  // Applies a click on `row`: pins the step and focuses the Marey graph.
  // Returns the alert, or nullptr for a row that does not exist.
  const Alert* Select(size_t row, SelectionState* selection, MareyModel* marey);
  std::optional<size_t> selected_row() const { return selected_row_; }
  uint64_t version() const { return version_; }

  static Kind KindOf(const Alert& alert);
  // "own_ns" -> "own time", "step_time_ns" -> "step time", unknown names
  // with underscores turned to spaces.
  static std::string MetricName(const std::string& metric);

 private:
  struct Entry {
    Alert raised;
    std::optional<Alert> cleared;
  };

  Row MakeRow(const Entry& entry, size_t index) const;

  size_t max_alerts_;
  std::deque<Entry> entries_;
  uint64_t newest_step_ = 0;
  std::set<uint32_t> selected_ranks_;
  std::optional<size_t> selected_row_;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_ALERTS_MODEL_H_
