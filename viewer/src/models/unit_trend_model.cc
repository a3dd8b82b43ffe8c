#include "trainscope/viewer/unit_trend_model.h"

#include <algorithm>

namespace trainscope::viewer {

const char* UnitTrendModel::MetricName(Metric metric) {
  switch (metric) {
    case kStepTime:
      return "step time";
    case kCompute:
      return "compute";
    case kWait:
      return "waits";
    case kBytesOut:
      return "bytes out";
    case kBytesIn:
      return "bytes in";
    case kMessagesOut:
      return "messages out";
    case kMessagesIn:
      return "messages in";
    case kMetricCount:
      break;
  }
  return "?";
}

UnitTrendModel::UnitTrendModel(size_t max_steps) : max_steps_(std::max<size_t>(1, max_steps)) {}

void UnitTrendModel::AddStep(const StepRecord& step) {
  std::map<uint32_t, Sample>& samples = steps_[step.step];
  samples.clear();
  for (const DeviceStepRecord& d : step.devices) {
    Sample& s = samples[d.rank];
    s.step_time_ns = d.step_time_ns;
    s.compute_ns = d.compute_ns;
    s.wait_ns = d.wait_ns;
    s.has_step = true;
  }
  for (const PairTrafficRecord& t : step.traffic) {
    Sample& out = samples[t.src_rank];
    out.bytes_out += t.bytes;
    out.messages_out += t.messages;
    Sample& in = samples[t.dst_rank];
    in.bytes_in += t.bytes;
    in.messages_in += t.messages;
  }
  while (steps_.size() > max_steps_) steps_.erase(steps_.begin());
  ++version_;
}

void UnitTrendModel::Clear() {
  steps_.clear();
  ++version_;
}

const std::map<uint32_t, UnitTrendModel::DeviceTotals>& UnitTrendModel::Totals() {
  if (totals_version_ == version_) return totals_;
  totals_version_ = version_;
  totals_.clear();
  for (const auto& [step, samples] : steps_) {
    for (const auto& [rank, s] : samples) {
      DeviceTotals& t = totals_[rank];
      t.bytes_out += static_cast<double>(s.bytes_out);
      t.bytes_in += static_cast<double>(s.bytes_in);
      if (!s.has_step) continue;
      t.step_time_ns += static_cast<double>(s.step_time_ns);
      t.compute_ns += static_cast<double>(s.compute_ns);
      t.wait_ns += static_cast<double>(s.wait_ns);
      ++t.steps;
    }
  }
  for (auto& [rank, t] : totals_) {
    const double steps = std::max<uint32_t>(1, t.steps);
    t.step_time_ns /= steps;
    t.compute_ns /= steps;
    t.wait_ns /= steps;
    t.bytes_out /= steps;
    t.bytes_in /= steps;
  }
  return totals_;
}

UnitTrendModel::Series UnitTrendModel::Build(ClusterHierarchy* hierarchy, ClusterLevel level,
                                             uint32_t frame_steps) const {
  Series series;
  series.level = level;
  frame_steps = std::max<uint32_t>(1, frame_steps);
  const std::vector<ClusterHierarchy::Unit>& units = hierarchy->units(level);
  series.units = units.size();
  if (steps_.empty() || units.empty()) return series;
  const TrafficModel::Matrix& m = hierarchy->traffic()->matrix();
  std::map<uint32_t, size_t> unit_of_rank;
  for (size_t i = 0; i < m.size(); ++i)
    unit_of_rank[m.devices[i].rank] = hierarchy->UnitOf(level, i);
  const uint64_t first = steps_.begin()->first;
  const uint64_t last = steps_.rbegin()->first;
  const size_t frames = static_cast<size_t>((last - first) / frame_steps + 1);
  series.frames.resize(frames);
  for (size_t f = 0; f < frames; ++f) {
    series.frames[f].first_step = first + f * frame_steps;
    series.frames[f].last_step = series.frames[f].first_step + frame_steps - 1;
  }
  series.values.assign(units.size() * kMetricCount * frames, 0.0);
  std::vector<double> slowest(units.size());
  std::vector<uint8_t> present(units.size());
  for (const auto& [step, samples] : steps_) {
    const size_t f = static_cast<size_t>((step - first) / frame_steps);
    ++series.frames[f].steps;
    std::fill(slowest.begin(), slowest.end(), 0.0);
    std::fill(present.begin(), present.end(), 0);
    for (const auto& [rank, s] : samples) {
      auto it = unit_of_rank.find(rank);
      if (it == unit_of_rank.end()) continue;  // not (yet) in the hierarchy
      const size_t u = it->second;
      series.at(u, kBytesOut, f) += static_cast<double>(s.bytes_out);
      series.at(u, kBytesIn, f) += static_cast<double>(s.bytes_in);
      series.at(u, kMessagesOut, f) += s.messages_out;
      series.at(u, kMessagesIn, f) += s.messages_in;
      if (!s.has_step) continue;
      series.at(u, kCompute, f) += static_cast<double>(s.compute_ns);
      series.at(u, kWait, f) += static_cast<double>(s.wait_ns);
      slowest[u] = std::max(slowest[u], static_cast<double>(s.step_time_ns));
      present[u] = 1;
    }
    for (size_t u = 0; u < units.size(); ++u)
      if (present[u]) series.at(u, kStepTime, f) += slowest[u];
  }
  // Durations are means per step of the frame.
  for (size_t f = 0; f < frames; ++f) {
    const double steps = std::max<uint32_t>(1, series.frames[f].steps);
    for (size_t u = 0; u < units.size(); ++u) {
      for (int metric : {kStepTime, kCompute, kWait}) series.at(u, metric, f) /= steps;
    }
  }
  return series;
}

}  // namespace trainscope::viewer
