// The per-pair traffic of a job (StepReport.traffic, docs/traffic.md) as the
// cluster views need it: a matrix of device pairs, devices ordered by host
// then rank (so a host's devices form one block, NodeTrix-style), each cell
// the bytes, messages and transfer time of that pair summed over the
// selected steps and every process group; per-row totals; and each link's
// bandwidth step by step, for box plots of how steady it is.
//
// Usage:
//   TrafficModel traffic;
//   traffic.SetDevices(devices);            // hosts (optional: traffic names them too)
//   traffic.AddStep(step_record);           // StepRecord::traffic
//   traffic.SetStepRange(10, 20);           // default: every step kept
//   const TrafficModel::Matrix& m = traffic.matrix();  // recomputed only when stale
//   const TrafficModel::Cell& c = m.at(i, j);           // row i sends to column j
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_TRAFFIC_MODEL_H_
#define TRAINSCOPE_VIEWER_TRAFFIC_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class TrafficModel {
 public:
  static constexpr size_t kDefaultMaxSteps = 5000;

  // One ordered pair (sender, receiver) over the selected steps.
  struct Cell {
    uint64_t bytes = 0;
    uint32_t messages = 0;
    int64_t duration_ns = 0;
    uint32_t steps = 0;  // selected steps in which the pair exchanged anything
    LinkLocality locality = LinkLocality::kUnknown;
    bool exact = false;  // some of it counted send/recv
    // Bytes over transfer time; 0 without time.
    double bytes_per_second() const {
      return duration_ns > 0 ? static_cast<double>(bytes) * 1e9 / static_cast<double>(duration_ns)
                             : 0.0;
    }
  };

  struct Device {
    uint32_t rank = 0;
    std::string host;
  };

  struct Matrix {
    std::vector<Device> devices;         // by host, then rank
    std::vector<Cell> cells;             // row-major: cells[src * n + dst]
    std::vector<uint64_t> row_bytes;     // sent by each row's device
    std::vector<int64_t> row_ns;         // its transfer time as a sender
    std::optional<uint64_t> first_step;  // the selected steps that have traffic
    std::optional<uint64_t> last_step;
    size_t size() const { return devices.size(); }
    const Cell& at(size_t src, size_t dst) const { return cells[src * devices.size() + dst]; }
    // The index of a rank, if it is in the matrix.
    std::optional<size_t> IndexOf(uint32_t rank) const;
  };

  // Five-number summary (for a box plot).
  struct BoxStats {
    size_t count = 0;
    double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  };

  explicit TrafficModel(size_t max_steps = kDefaultMaxSteps);

  void SetDevices(const std::vector<DeviceInfo>& devices);
  void AddStep(const StepRecord& step);
  void Clear();
  // Inclusive; nullopt: open on that side.
  void SetStepRange(std::optional<uint64_t> first, std::optional<uint64_t> last);

  const Matrix& matrix();
  // One value per selected step in which src sent to dst: that step's bytes
  // over its transfer time (all groups), in step order.
  std::vector<double> LinkBandwidths(uint32_t src_rank, uint32_t dst_rank) const;
  // The ordered pair with the most transfer time (ties: fewer bytes per
  // second, then lower indices); nullopt without traffic.
  std::optional<std::pair<size_t, size_t>> HeaviestCell();
  static std::optional<std::pair<size_t, size_t>> HeaviestCell(const Matrix& m);
  // The rows and columns of these ranks only (their order kept).
  static Matrix Restrict(const Matrix& m, const std::set<uint32_t>& ranks);

  static BoxStats Box(std::vector<double> values);

  bool has_traffic() const { return !steps_.empty(); }
  uint64_t version() const { return version_; }

 private:
  bool Selected(uint64_t step) const;
  void Rebuild();

  size_t max_steps_;
  std::map<uint64_t, std::vector<PairTrafficRecord>> steps_;
  std::map<uint32_t, std::string> hosts_;
  std::optional<uint64_t> first_;
  std::optional<uint64_t> last_;
  bool dirty_ = true;
  uint64_t version_ = 0;
  Matrix matrix_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_TRAFFIC_MODEL_H_
