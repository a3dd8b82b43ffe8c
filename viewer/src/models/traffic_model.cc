#include "trainscope/viewer/traffic_model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace trainscope::viewer {

std::optional<size_t> TrafficModel::Matrix::IndexOf(uint32_t rank) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].rank == rank) return i;
  return std::nullopt;
}

TrafficModel::TrafficModel(size_t max_steps) : max_steps_(std::max<size_t>(1, max_steps)) {}

void TrafficModel::SetDevices(const std::vector<DeviceInfo>& devices) {
  for (const DeviceInfo& d : devices) {
    std::string& host = hosts_[d.rank];
    if (!d.host.empty()) host = d.host;
  }
  dirty_ = true;
  ++version_;
}

void TrafficModel::AddStep(const StepRecord& step) {
  if (step.traffic.empty()) return;
  steps_[step.step] = step.traffic;
  // The oldest go first: the views look at recent steps.
  while (steps_.size() > max_steps_) steps_.erase(steps_.begin());
  // Every device that appears gets a row; a host named by SetDevices wins.
  auto note = [&](uint32_t rank, const std::string& host) {
    std::string& known = hosts_[rank];
    if (known.empty()) known = host;
  };
  for (const PairTrafficRecord& t : step.traffic) {
    note(t.src_rank, t.src_host);
    note(t.dst_rank, t.dst_host);
  }
  dirty_ = true;
  ++version_;
}

void TrafficModel::Clear() {
  steps_.clear();
  hosts_.clear();
  dirty_ = true;
  ++version_;
}

void TrafficModel::SetStepRange(std::optional<uint64_t> first, std::optional<uint64_t> last) {
  if (first == first_ && last == last_) return;
  first_ = first;
  last_ = last;
  dirty_ = true;
  ++version_;
}

bool TrafficModel::Selected(uint64_t step) const {
  return (!first_.has_value() || step >= *first_) && (!last_.has_value() || step <= *last_);
}

const TrafficModel::Matrix& TrafficModel::matrix() {
  if (dirty_) Rebuild();
  return matrix_;
}

void TrafficModel::Rebuild() {
  dirty_ = false;
  Matrix m;
  // Every known device, also those without traffic in the range, so the
  // matrix keeps its shape while the range moves.
  for (const auto& [rank, host] : hosts_) m.devices.push_back({rank, host});
  std::stable_sort(m.devices.begin(), m.devices.end(), [](const Device& a, const Device& b) {
    return std::tie(a.host, a.rank) < std::tie(b.host, b.rank);
  });
  const size_t n = m.devices.size();
  std::map<uint32_t, size_t> index;
  for (size_t i = 0; i < n; ++i) index[m.devices[i].rank] = i;
  m.cells.assign(n * n, Cell{});
  m.row_bytes.assign(n, 0);
  m.row_ns.assign(n, 0);
  std::vector<uint64_t> last_step_of(n * n, UINT64_MAX);
  for (const auto& [step, traffic] : steps_) {
    if (!Selected(step)) continue;
    if (!traffic.empty()) {
      if (!m.first_step.has_value()) m.first_step = step;
      m.last_step = step;
    }
    for (const PairTrafficRecord& t : traffic) {
      const size_t i = index.at(t.src_rank), j = index.at(t.dst_rank);
      Cell& c = m.cells[i * n + j];
      c.bytes += t.bytes;
      c.messages += t.messages;
      c.duration_ns += t.duration_ns;
      c.exact = c.exact || t.exact;
      if (t.locality != LinkLocality::kUnknown) c.locality = t.locality;
      if (last_step_of[i * n + j] != step) {
        last_step_of[i * n + j] = step;
        ++c.steps;
      }
      m.row_bytes[i] += t.bytes;
      m.row_ns[i] += t.duration_ns;
    }
  }
  matrix_ = std::move(m);
}

std::vector<double> TrafficModel::LinkBandwidths(uint32_t src_rank, uint32_t dst_rank) const {
  std::vector<double> out;
  for (const auto& [step, traffic] : steps_) {
    if (!Selected(step)) continue;
    uint64_t bytes = 0;
    int64_t ns = 0;
    bool any = false;
    for (const PairTrafficRecord& t : traffic) {
      if (t.src_rank != src_rank || t.dst_rank != dst_rank) continue;
      any = true;
      bytes += t.bytes;
      ns += t.duration_ns;
    }
    if (any && ns > 0) out.push_back(static_cast<double>(bytes) * 1e9 / static_cast<double>(ns));
  }
  return out;
}

std::optional<std::pair<size_t, size_t>> TrafficModel::HeaviestCell() {
  return HeaviestCell(matrix());
}

TrafficModel::Matrix TrafficModel::Restrict(const Matrix& m, const std::set<uint32_t>& ranks) {
  Matrix out;
  std::vector<size_t> keep;
  for (size_t i = 0; i < m.size(); ++i) {
    if (ranks.count(m.devices[i].rank) == 0) continue;
    keep.push_back(i);
    out.devices.push_back(m.devices[i]);
  }
  const size_t k = keep.size();
  out.cells.resize(k * k);
  out.row_bytes.assign(k, 0);
  out.row_ns.assign(k, 0);
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = 0; b < k; ++b) {
      const Cell& c = m.at(keep[a], keep[b]);
      out.cells[a * k + b] = c;
      out.row_bytes[a] += c.bytes;
      out.row_ns[a] += c.duration_ns;
    }
  }
  out.first_step = m.first_step;
  out.last_step = m.last_step;
  return out;
}

std::optional<std::pair<size_t, size_t>> TrafficModel::HeaviestCell(const Matrix& m) {
  std::optional<std::pair<size_t, size_t>> best;
  for (size_t i = 0; i < m.size(); ++i) {
    for (size_t j = 0; j < m.size(); ++j) {
      const Cell& c = m.at(i, j);
      if (c.steps == 0) continue;
      if (!best.has_value()) {
        best = {i, j};
        continue;
      }
      const Cell& b = m.at(best->first, best->second);
      if (c.duration_ns > b.duration_ns ||
          (c.duration_ns == b.duration_ns && c.bytes_per_second() < b.bytes_per_second())) {
        best = {i, j};
      }
    }
  }
  return best;
}

TrafficModel::BoxStats TrafficModel::Box(std::vector<double> values) {
  BoxStats box;
  box.count = values.size();
  if (values.empty()) return box;
  std::sort(values.begin(), values.end());
  // Linear interpolation between closest ranks (numpy's default).
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(values.size() - 1, lo + 1);
    return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
  };
  box.min = values.front();
  box.q1 = quantile(0.25);
  box.median = quantile(0.5);
  box.q3 = quantile(0.75);
  box.max = values.back();
  return box;
}

}  // namespace trainscope::viewer
