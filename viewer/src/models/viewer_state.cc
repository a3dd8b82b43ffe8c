#include "trainscope/viewer/viewer_state.h"

#include <algorithm>
#include <optional>
#include <string>

namespace trainscope::viewer {

ViewerState::ViewerState(MareyModel::Options marey_options)
    : marey(&names, marey_options),
      traffic_matrix(&traffic),
      hierarchy(&traffic),
      topology(&hierarchy, &trends, &selection),
      trend(&hierarchy, &trends, &selection),
      chord(&hierarchy, &selection),
      hilbert_ring(&hierarchy, &trends, &selection) {}

void ViewerState::AddDevices(const std::vector<DeviceInfo>& devices) {
  bool changed = false;
  for (const DeviceInfo& device : devices) {
    auto [it, inserted] = devices_.try_emplace(device.rank, device);
    if (!inserted) {
      DeviceInfo merged = it->second;
      if (!device.host.empty()) merged.host = device.host;
      if (device.stage != 0) merged.stage = device.stage;
      if (!device.rack.empty()) merged.rack = device.rack;
      if (merged.host == it->second.host && merged.stage == it->second.stage &&
          merged.rack == it->second.rack) {
        continue;
      }
      it->second = merged;
    }
    changed = true;
  }
  if (!changed) return;
  std::vector<DeviceInfo> all;
  for (const auto& [rank, info] : devices_) all.push_back(info);
  marey.SetDevices(all);
  traffic.SetDevices(all);
  hierarchy.SetDeviceRacks(all);
}

void ViewerState::AddSteps(const std::vector<StepRecord>& steps) {
  std::vector<DeviceInfo> stages;
  for (const StepRecord& step : steps) {
    overview.AddStep(step);
    marey.AddStep(step);
    traffic.AddStep(step);
    trends.AddStep(step);
    jobs.OnStep(job_id_, step.step, step.end_ns);
    // A step fewer devices closed than the job's other steps (the last,
    // partial one only rank 0 ran as the job ended) is drawn in the lines
    // but not followed: its bars would show one device. The collector lists
    // every rank of such a step, the ones without an end mark incomplete,
    // so what counts is the devices that completed it.
    const size_t closed = static_cast<size_t>(
        std::count_if(step.devices.begin(), step.devices.end(),
                      [](const DeviceStepRecord& d) { return d.complete; }));
    step_devices_ = std::max(step_devices_, closed);
    if (closed >= step_devices_) selection.OnStepClosed(step.step);
    alerts.SetNewestStep(step.step);
    for (const DeviceStepRecord& d : step.devices) {
      auto it = devices_.find(d.rank);
      if (it == devices_.end() || it->second.stage != d.stage)
        stages.push_back({d.rank, d.stage, ""});
    }
  }
  if (!stages.empty()) AddDevices(stages);
}

void ViewerState::Load(const JobData& data) {
  job_id_ = data.job.job_id;
  step_devices_ = 0;
  selection.ForgetSteps();
  overview.Clear();
  traffic.Clear();
  trends.Clear();
  marey.Clear();
  alerts.Clear();
  devices_.clear();
  jobs.Update(data.job);
  AddDevices(data.devices);
  AddSteps(data.steps);
  marey.AddOperators(InternOperators(data.operators, &names));
  for (const Alert& alert : data.alerts) alerts.Add(alert);
  ShowAlerts();
  loss.Load(data.loss);
  SyncSelection();
}

void ViewerState::ApplyLoss(FeedCoalescer::Delta* delta) {
  if (delta->reset) loss.ClearData();
  if (delta->loss.has_value()) {
    if (delta->loss->state.has_value()) loss.SetState(std::move(*delta->loss->state));
    for (auto& [item, snapshots] : delta->loss->snapshots) {
      loss.SetItemSnapshots(item, std::move(snapshots));
    }
  }
  // After the list and the answers: they decide which items keep snapshots.
  for (ItemSnapshotRecord& snapshot : delta->item_snapshots) loss.AddSnapshot(std::move(snapshot));
}

void ViewerState::Apply(FeedCoalescer::Delta delta) {
  if (delta.reset) {
    step_devices_ = 0;
    overview.Clear();
    traffic.Clear();
    trends.Clear();
    marey.Clear();
    alerts.Clear();
    devices_.clear();
  }
  if (delta.job.has_value()) {
    if (job_id_.empty()) job_id_ = delta.job->job_id;
    std::vector<DeviceInfo> hosts;
    for (const RankRecord& rank : delta.job->ranks) {
      hosts.push_back({rank.rank, 0, rank.host, rank.rack});
    }
    jobs.Update(*delta.job);
    AddDevices(hosts);
  }
  AddDevices(delta.devices);
  AddSteps(delta.steps);
  for (const OperatorBatchRecord& batch : delta.operator_batches) {
    marey.AddOperators(InternOperators(batch, &names));
  }
  if (!delta.alerts.empty()) {
    for (const Alert& alert : delta.alerts) alerts.Add(alert);
    ShowAlerts();
  }
  ApplyLoss(&delta);
  for (std::string& notice : delta.notices) notices_.push_back(std::move(notice));
  if (notices_.size() > 100) notices_.erase(notices_.begin(), notices_.end() - 100);
  SyncSelection();
}

void ViewerState::ShowAlerts() {
  // The devices' marks are for open alerts only (a cleared straggler's
  // device is no longer marked); the overview's step marks keep every
  // raise, as history.
  const std::vector<Alert> open = alerts.open_alerts();
  marey.SetAlerts(open);
  topology.SetAlerts(open);
  hilbert_ring.SetAlerts(open);
  overview.SetAlertSteps(alerts.AlertSteps());
}

void ViewerState::ShowConnection(const ConnectionModel& connection) {
  // The steps' clock is the job's wall clock; the outages are the viewer's.
  std::vector<OverviewModel::Gap> gaps;
  for (const ConnectionModel::Outage& outage : connection.outages()) {
    gaps.push_back({outage.start_ns, outage.end_ns});
  }
  overview.SetGaps(std::move(gaps));
  if (connection.data_stale()) {
    const int64_t age = connection.update_age_s();
    jobs.SetStale(age >= 0 ? std::to_string(age) + " s ago" : std::string("earlier"));
  } else {
    jobs.SetStale(std::nullopt);
  }
}

void ViewerState::SelectStep(uint64_t step, bool move_marey) {
  selection.Pin(step);
  // The Marey graph goes to the step (a click in the overview, the arrow
  // keys); an alert's highlight about another step is stale now.
  if (move_marey) marey.ShowAroundStep(step);
  marey.ClearFocusUnlessStep(step);
  SyncSelection();
}

bool ViewerState::StepBy(int delta) {
  const std::optional<uint64_t> current = selection.selected_step();
  if (!current.has_value() || delta == 0) return false;
  const std::optional<uint64_t> target = overview.NeighbourStep(*current, delta);
  if (!target.has_value()) return false;
  SelectStep(*target);
  return true;
}

void ViewerState::Follow() {
  selection.Follow();
  // Following moves the Marey graph too, whatever was zoomed or focused.
  marey.FollowNewest();
  marey.ClearFocus();
  SyncSelection();
}

const Alert* ViewerState::SelectAlert(size_t row) {
  const Alert* alert = alerts.Select(row, &selection, &marey);
  // A slow link's alert selects that link in the cluster views.
  if (alert != nullptr && alert->rule == "slow_link" && alert->ranks.size() >= 2) {
    selection.SelectLink(alert->ranks[0], alert->ranks[1]);
  }
  SyncSelection();
  return alert;
}

bool ViewerState::SyncSelection() {
  if (selection.version() == synced_version_) return false;
  synced_version_ = selection.version();
  overview.SetSelectedStep(selection.selected_step());
  marey.SetSelectedStep(selection.selected_step());
  // Linked selection: the devices (and link) chosen in any view stand out in
  // the Marey graph, the overview's bars and the alerts that name them.
  overview.SetSelectedRanks(selection.selected_ranks());
  marey.SetSelection(selection.selected_ranks(), selection.selected_link());
  alerts.SetSelectedRanks(selection.selected_ranks());
  // Linked selection: a lasso of two or more devices focuses the matrix on
  // them; a link (a click, its alert) is outlined in it.
  const auto link = selection.selected_link();
  traffic_matrix.SetFocus(!link.has_value() && selection.selected_ranks().size() >= 2
                              ? selection.selected_ranks()
                              : std::set<uint32_t>{});
  traffic_matrix.SetSelectedLink(link);
  return true;
}

}  // namespace trainscope::viewer
