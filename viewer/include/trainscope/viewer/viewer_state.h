// Every model of one viewer window and the glue between them: loading a
// whole job, applying live deltas, and keeping the shared selected step in
// every view. Plain C++ like the models, so the glue is tested too.
//
// Usage:
//   ViewerState state;
//   state.Load(job_data);                 // offline or a fresh snapshot
//   if (auto delta = coalescer.Take()) state.Apply(std::move(*delta));
//   state.SelectStep(12);                 // a click in the overview (pins)
//   state.SelectAlert(0);                 // a click in the alerts list
//   state.loss.Choose(1432);              // a click in the Selection View
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_VIEWER_STATE_H_
#define TRAINSCOPE_VIEWER_VIEWER_STATE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainscope/viewer/alerts_model.h"
#include "trainscope/viewer/chord_layout.h"
#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/connection_model.h"
#include "trainscope/viewer/feed_coalescer.h"
#include "trainscope/viewer/hilbert_ring_layout.h"
#include "trainscope/viewer/jobs_model.h"
#include "trainscope/viewer/loss_model.h"
#include "trainscope/viewer/marey_model.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/overview_model.h"
#include "trainscope/viewer/range_stats_model.h"
#include "trainscope/viewer/records.h"
#include "trainscope/viewer/search_model.h"
#include "trainscope/viewer/selection_state.h"
#include "trainscope/viewer/topology_layout.h"
#include "trainscope/viewer/traffic_matrix_layout.h"
#include "trainscope/viewer/traffic_model.h"
#include "trainscope/viewer/trend_layout.h"
#include "trainscope/viewer/unit_trend_model.h"

namespace trainscope::viewer {

class ViewerState {
 public:
  explicit ViewerState(MareyModel::Options marey_options = {});

  void Load(const JobData& data);
  void Apply(FeedCoalescer::Delta delta);
  // Pins `step` in every view; the Marey graph shows the steps around it
  // unless the click came from the Marey graph itself (`move_marey` false).
  void SelectStep(uint64_t step, bool move_marey = true);
  // The arrow keys: selects the step `delta` steps after (before, when
  // negative) the selected one, among the steps the overview holds, and
  // pins it; false at either end or without a selection.
  bool StepBy(int delta);
  // Follows the newest step in every view, the Marey graph included.
  void Follow();
  // Returns the alert, or nullptr when `row` does not exist.
  const Alert* SelectAlert(size_t row);
  // The live link's health in the views: the overview breaks its lines
  // across the outages, and the Jobs table greys the job ("last seen ...
  // N s ago", no step rate) while what the views show may be old. Called
  // whenever `connection` changes (MainWindow's frame timer).
  void ShowConnection(const ConnectionModel& connection);
  // Pushes the selected step into the views; returns whether it changed.
  bool SyncSelection();

  const std::string& job_id() const { return job_id_; }
  const std::vector<std::string>& notices() const { return notices_; }

  NameTable names;
  JobsModel jobs;
  OverviewModel overview;
  MareyModel marey;
  AlertsModel alerts;
  SelectionState selection;
  LossModel loss;
  TrafficModel traffic;                // per-pair traffic of the steps (StepRecord::traffic)
  TrafficMatrixLayout traffic_matrix;  // draws `traffic`
  // The cluster views (issue 24): racks over the traffic's devices, each
  // device's per-step figures, and their layouts, all linked through
  // `selection`'s devices and link.
  ClusterHierarchy hierarchy;
  UnitTrendModel trends;
  TopologyLayout topology;
  TrendLayout trend;
  ChordLayout chord;
  HilbertRingLayout hilbert_ring;
  // The range statistics panel (issue 23.5): a step range, its per-device
  // figures and top operators, read from `marey`'s data.
  RangeStatsModel range_stats;
  // Finds operators, steps and ranks in what the Marey graph holds (issue
  // 23.5); its jumps set `selection` and move `marey`.
  SearchModel search{&names, &marey.store()};

 private:
  void AddDevices(const std::vector<DeviceInfo>& devices);
  void AddSteps(const std::vector<StepRecord>& steps);
  void ApplyLoss(FeedCoalescer::Delta* delta);
  // Hands the alerts to the views that mark them.
  void ShowAlerts();

  std::string job_id_;
  std::map<uint32_t, DeviceInfo> devices_;
  std::vector<std::string> notices_;
  uint64_t synced_version_ = UINT64_MAX;
  size_t step_devices_ = 0;  // the most devices a step had: fewer is a partial step
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_VIEWER_STATE_H_
