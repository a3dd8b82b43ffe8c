#include "trainscope/viewer/proto_convert.h"

#include "trainscope/viewer/half_float.h"

namespace trainscope::viewer {
namespace {

OpClass ConvertClass(trainscope::v1::OperatorClass c) {
  switch (c) {
    case trainscope::v1::OPERATOR_CLASS_COLLECTIVE:
      return OpClass::kCollective;
    case trainscope::v1::OPERATOR_CLASS_SEND:
      return OpClass::kSend;
    case trainscope::v1::OPERATOR_CLASS_RECV:
      return OpClass::kRecv;
    case trainscope::v1::OPERATOR_CLASS_GPU_KERNEL:
      return OpClass::kGpuKernel;
    case trainscope::v1::OPERATOR_CLASS_GPU_COLLECTIVE:
      return OpClass::kGpuCollective;
    case trainscope::v1::OPERATOR_CLASS_GPU_COPY:
      return OpClass::kGpuCopy;
    default:
      return OpClass::kCompute;
  }
}

}  // namespace

JobStateKind ConvertJobState(trainscope::v1::JobState state) {
  switch (state) {
    case trainscope::v1::JOB_STATE_RUNNING:
      return JobStateKind::kRunning;
    case trainscope::v1::JOB_STATE_IDLE:
      return JobStateKind::kIdle;
    case trainscope::v1::JOB_STATE_FINISHED:
      return JobStateKind::kFinished;
    case trainscope::v1::JOB_STATE_HALTED:
      return JobStateKind::kHalted;
    case trainscope::v1::JOB_STATE_LOST:
      return JobStateKind::kLost;
    default:
      return JobStateKind::kUnknown;
  }
}

StepRecord ConvertStep(const trainscope::v1::StepReport& report) {
  StepRecord step;
  step.step = report.step();
  step.start_ns = report.start_ns();
  step.end_ns = report.end_ns();
  step.devices.reserve(report.devices_size());
  for (const auto& d : report.devices()) {
    DeviceStepRecord r;
    r.rank = d.rank();
    r.stage = d.stage();
    r.start_ns = d.start_ns();
    r.end_ns = d.end_ns();
    r.step_time_ns = d.step_time_ns();
    r.data_wait_ns = d.data_wait_ns();
    r.forward_ns = d.forward_ns();
    r.backward_ns = d.backward_ns();
    r.optimizer_ns = d.optimizer_ns();
    r.compute_ns = d.compute_ns();
    r.collective_ns = d.collective_ns();
    r.wait_ns = d.wait_ns();
    r.idle_ns = d.idle_ns();
    r.flops = d.flops();
    r.flops_per_second = d.flops_per_second();
    r.peak_memory_bytes = d.peak_memory_bytes();
    r.complete = d.complete();
    r.transfer_ns = d.transfer_ns();
    r.has_gpu = d.has_gpu();
    r.gpu_busy_ns = d.gpu_busy_ns();
    r.gpu_idle_launch_bound_ns = d.gpu_idle_launch_bound_ns();
    r.gpu_idle_host_sync_ns = d.gpu_idle_host_sync_ns();
    r.gpu_idle_data_wait_ns = d.gpu_idle_data_wait_ns();
    r.h2d_copy_ns = d.h2d_copy_ns();
    r.d2h_copy_ns = d.d2h_copy_ns();
    r.other_copy_ns = d.other_copy_ns();
    r.comm_compute_overlap_ns = d.comm_compute_overlap_ns();
    r.kernels = d.kernels();
    r.gpu_streams = d.gpu_streams();
    r.cpu_compute_ns = d.cpu_compute_ns();
    r.cpu_collective_ns = d.cpu_collective_ns();
    for (const auto& k : d.top_kernels()) {
      r.top_kernels.push_back(
          {k.name(), ConvertClass(k.op_class()), k.count(), k.total_ns(), k.launch_op()});
    }
    step.devices.push_back(std::move(r));
  }
  step.traffic.reserve(report.traffic_size());
  for (const auto& t : report.traffic()) {
    PairTrafficRecord r;
    r.step = t.step();
    r.src_rank = t.src_rank();
    r.dst_rank = t.dst_rank();
    r.group = t.group();
    r.exact = t.exact();
    r.bytes = t.bytes();
    r.messages = t.messages();
    r.duration_ns = t.duration_ns();
    r.locality = static_cast<LinkLocality>(t.locality());
    r.src_host = t.src_host();
    r.dst_host = t.dst_host();
    step.traffic.push_back(std::move(r));
  }
  return step;
}

OperatorBatchRecord ConvertOperators(const trainscope::v1::OperatorBatch& batch) {
  OperatorBatchRecord out;
  out.strings.assign(batch.strings().begin(), batch.strings().end());
  if (out.strings.empty()) out.strings.emplace_back();
  const uint32_t count = static_cast<uint32_t>(out.strings.size());
  out.operators.reserve(batch.operators_size());
  for (const auto& op : batch.operators()) {
    OperatorRecord r;
    r.rank = op.rank();
    r.start_ns = op.start_ns();
    r.end_ns = op.end_ns();
    r.raw_start_ns = op.raw_start_ns();
    r.raw_end_ns = op.raw_end_ns();
    // A name outside the string table is shown unnamed rather than trusted.
    r.name = op.name() < count ? op.name() : 0;
    r.group = op.group() < count ? op.group() : 0;
    r.op_class = ConvertClass(op.op_class());
    r.step = op.step();
    r.group_sequence = op.group_sequence();
    r.peer = op.peer();
    r.bytes = op.bytes();
    r.gpu_device = op.gpu_device();
    r.gpu_stream = op.gpu_stream();
    out.operators.push_back(r);
  }
  return out;
}

JobRecord ConvertJobSummary(const trainscope::v1::JobSummary& summary) {
  JobRecord job;
  job.job_id = summary.job_id();
  job.state = ConvertJobState(summary.state());
  job.world_size = summary.world_size();
  job.ranks_connected = summary.ranks_connected();
  job.recording = summary.recording();
  if (summary.has_loss_contribution()) job.loss_contribution = summary.loss_contribution();
  job.events_per_second = summary.events_per_second();
  job.events_received = summary.events_received();
  return job;
}

RankRecord ConvertRank(const trainscope::v1::RankStatus& rank) {
  return {rank.rank(), rank.host(), rank.pid(), rank.connected(), rank.events_received(),
          rank.rack()};
}

Alert ConvertAlert(const trainscope::v1::Alert& alert) {
  Alert out;
  out.job = alert.job_id();
  out.alert_id = alert.alert_id();
  out.state = alert.state() == trainscope::v1::ALERT_STATE_CLEARED ? AlertState::kCleared
                                                                    : AlertState::kRaised;
  out.step = alert.step();
  out.onset_step = alert.onset_step();
  out.changed_unix_ns = alert.raised_unix_ns();
  out.caused_by_alert_id = alert.caused_by_alert_id();
  out.cause = alert.cause_rank();
  if (alert.cause_rank() >= 0) out.ranks.push_back(static_cast<uint32_t>(alert.cause_rank()));
  for (uint32_t rank : alert.ranks()) {
    if (static_cast<int64_t>(rank) != alert.cause_rank()) out.ranks.push_back(rank);
  }
  out.op = alert.operator_name();
  out.metric = alert.metric();
  out.value = alert.observed();
  out.baseline = alert.baseline();
  out.rule = alert.rule();
  out.text = alert.message();
  if (alert.has_item()) out.item = alert.item();
  return out;
}

JobRecord ConvertJob(const trainscope::v1::JobStatus& status) {
  JobRecord job = ConvertJobSummary(status.summary());
  for (const auto& rank : status.ranks()) job.ranks.push_back(ConvertRank(rank));
  return job;
}

ThumbnailRecord ConvertThumbnail(const trainscope::v1::Thumbnail& thumbnail) {
  ThumbnailRecord out;
  out.height = thumbnail.height();
  out.width = thumbnail.width();
  out.channels = thumbnail.channels();
  out.pixels.assign(thumbnail.pixels().begin(), thumbnail.pixels().end());
  return out;  // the views check valid() before drawing
}

LossStateRecord ConvertLossState(const trainscope::v1::LossState& state) {
  LossStateRecord out;
  out.epoch = state.epoch();
  out.iteration = state.iteration();
  out.top_n = state.top_n();
  out.selection_layer = state.selection_layer();
  out.monitored_layers.assign(state.monitored_layers().begin(), state.monitored_layers().end());
  if (state.has_last_complete_epoch()) out.last_complete_epoch = state.last_complete_epoch();
  out.items.reserve(state.items_size());
  for (const auto& item : state.items()) {
    DifficultItemRecord r;
    r.item = item.item();
    r.contribution = item.contribution();
    r.label = item.label();
    r.prediction = item.prediction();
    r.rank = item.rank();
    r.epochs_in_top = item.epochs_in_top();
    for (const auto& e : item.history()) {
      r.history.push_back({e.epoch(), e.contribution(), e.position()});
    }
    if (item.has_input()) r.input = ConvertThumbnail(item.input());
    r.snapshots = item.snapshots();
    out.items.push_back(std::move(r));
  }
  return out;
}

ItemSnapshotRecord ConvertItemSnapshot(const trainscope::v1::ItemSnapshot& snapshot) {
  ItemSnapshotRecord out;
  out.item = snapshot.item();
  out.epoch = snapshot.epoch();
  out.iteration = snapshot.iteration();
  out.label = snapshot.label();
  out.prediction = snapshot.prediction();
  out.contribution = snapshot.contribution();
  out.rank = snapshot.rank();
  if (snapshot.has_input()) out.input = ConvertThumbnail(snapshot.input());
  out.maps.reserve(snapshot.maps_size());
  for (const auto& map : snapshot.maps()) {
    LayerMapRecord m;
    m.layer = map.layer();
    m.height = map.height();
    m.width = map.width();
    const size_t count = size_t{map.height()} * map.width();
    // Both or neither: a map with one half missing would draw a false zero.
    if (!DecodeHalfs(map.contribution(), count, &m.contribution) ||
        !DecodeHalfs(map.reduction(), count, &m.reduction)) {
      m.contribution.clear();
      m.reduction.clear();
    }
    out.maps.push_back(std::move(m));
  }
  return out;
}

LossData ConvertLossAnswer(const trainscope::v1::LossAnswer& answer, std::optional<uint64_t> item) {
  LossData out;
  out.state = ConvertLossState(answer.state());
  if (item.has_value()) {
    std::vector<ItemSnapshotRecord>& list = out.snapshots[*item];
    for (const auto& snapshot : answer.snapshots()) {
      if (snapshot.item() == *item) list.push_back(ConvertItemSnapshot(snapshot));
    }
  }
  return out;
}

std::vector<DeviceInfo> DevicesOf(const std::vector<StepRecord>& steps,
                                  const std::vector<RankRecord>& ranks) {
  std::map<uint32_t, DeviceInfo> devices;
  for (const RankRecord& r : ranks) devices[r.rank] = {r.rank, 0, r.host, r.rack};
  for (const StepRecord& step : steps) {
    for (const DeviceStepRecord& d : step.devices) {
      DeviceInfo& info = devices[d.rank];
      info.rank = d.rank;
      info.stage = d.stage;
    }
  }
  std::vector<DeviceInfo> out;
  for (const auto& [rank, info] : devices) out.push_back(info);
  return out;
}

}  // namespace trainscope::viewer
