// Each device's per-step figures the cluster views size and colour by (step
// time, compute, waits, bytes and messages sent and received), and their
// GiViP-style temporal aggregation (issue 24.3): frames of N consecutive
// steps, per unit of a hierarchy level (device, host, rack). A unit's frame
// value is, for step time, the mean over the frame's steps of its slowest
// device's step time (a host is as slow as its slowest device); for compute
// and waits the mean per step of its devices' sum; for bytes and messages
// the frame's total.
//
// Usage:
//   UnitTrendModel trends;
//   trends.AddStep(step_record);                  // devices + traffic
//   auto totals = trends.Totals();                // per rank, means per step
//   UnitTrendModel::Series s = trends.Build(&hierarchy, ClusterLevel::kHost, 5);
//   double bytes = s.at(unit, UnitTrendModel::kBytesOut, frame);
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_UNIT_TREND_MODEL_H_
#define TRAINSCOPE_VIEWER_UNIT_TREND_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "trainscope/viewer/cluster_hierarchy.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class UnitTrendModel {
 public:
  enum Metric : int {
    kStepTime = 0,
    kCompute,
    kWait,
    kBytesOut,
    kBytesIn,
    kMessagesOut,
    kMessagesIn,
    kMetricCount
  };
  static const char* MetricName(Metric metric);
  // Whether the metric is a duration in ns (else bytes or a count).
  static bool IsDuration(Metric metric) { return metric <= kWait; }
  static bool IsBytes(Metric metric) { return metric == kBytesOut || metric == kBytesIn; }

  // One device in one step.
  struct Sample {
    int64_t step_time_ns = 0;
    int64_t compute_ns = 0;
    int64_t wait_ns = 0;
    uint64_t bytes_out = 0;
    uint64_t bytes_in = 0;
    uint32_t messages_out = 0;
    uint32_t messages_in = 0;
    bool has_step = false;  // the step's devices named it (traffic alone: false)
  };

  // A device over the kept steps: means per step it took part in.
  struct DeviceTotals {
    double step_time_ns = 0;
    double compute_ns = 0;
    double wait_ns = 0;
    double bytes_out = 0;
    double bytes_in = 0;
    uint32_t steps = 0;
    // Compute over step time, 0..1; 0 without step time.
    double efficiency() const { return step_time_ns > 0 ? compute_ns / step_time_ns : 0.0; }
  };

  struct Frame {
    uint64_t first_step = 0;
    uint64_t last_step = 0;  // inclusive
    uint32_t steps = 0;      // kept steps in it
  };

  struct Series {
    ClusterLevel level = ClusterLevel::kDevice;
    size_t units = 0;
    std::vector<Frame> frames;
    std::vector<double> values;  // [unit][metric][frame]
    double at(size_t unit, int metric, size_t frame) const {
      return values[(unit * kMetricCount + metric) * frames.size() + frame];
    }
    double& at(size_t unit, int metric, size_t frame) {
      return values[(unit * kMetricCount + metric) * frames.size() + frame];
    }
  };

  explicit UnitTrendModel(size_t max_steps = 5000);

  void AddStep(const StepRecord& step);
  void Clear();

  const std::map<uint32_t, DeviceTotals>& Totals();
  // Frames of `frame_steps` (>= 1) consecutive step numbers, from the first
  // kept step; units of `level` in the hierarchy's order.
  Series Build(ClusterHierarchy* hierarchy, ClusterLevel level, uint32_t frame_steps) const;

  const std::map<uint64_t, std::map<uint32_t, Sample>>& steps() const { return steps_; }
  uint64_t version() const { return version_; }

 private:
  size_t max_steps_;
  std::map<uint64_t, std::map<uint32_t, Sample>> steps_;
  std::map<uint32_t, DeviceTotals> totals_;
  uint64_t totals_version_ = UINT64_MAX;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_UNIT_TREND_MODEL_H_
