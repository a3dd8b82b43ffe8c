// Builds one closed step's StepReport from its parts: the devices'
// summaries (DeviceStepSummarizer), the ranks missing from it and the links
// and per-pair traffic its communication completed (CollectiveMatcher); the
// traffic's group names come from `strings` (null: left empty). Derives the report's span
// (earliest device start to latest end) and per pipeline stage its ranks,
// FLOPs, and its devices' mean compute and bubble (idle + wait) time.
//
// Usage:
//   StepReportBuilder builder(step, &strings);
//   summarizer.Summarize(..., &device, &ops, builder.links());
//   builder.AddDevice(std::move(device));
//   builder.AddMissingRank(rank);
//   v1::StepReport report = std::move(builder).Build();
//
// Threading: plain value type, one per closing step.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_REPORT_BUILDER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_REPORT_BUILDER_H_

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "trainscope/collector/analysis/collective_matcher.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class StepReportBuilder {
 public:
  explicit StepReportBuilder(uint64_t step, const JobStrings* strings = nullptr)
      : strings_(strings) {
    report_.set_step(step);
  }

  // In rank order.
  void AddDevice(trainscope::v1::DeviceStep&& device);
  void AddMissingRank(uint32_t rank) { report_.add_missing_ranks(rank); }
  // Where the step's communication adds its links.
  CollectiveMatcher::Links* links() { return &links_; }

  trainscope::v1::StepReport Build() &&;

 private:
  struct StageTotals {
    std::vector<uint32_t> ranks;
    uint64_t flops = 0;
    int64_t compute_ns = 0;
    int64_t bubble_ns = 0;
  };

  const JobStrings* const strings_;
  trainscope::v1::StepReport report_;
  CollectiveMatcher::Links links_;
  std::map<uint32_t, StageTotals> stages_;
  int64_t start_ns_ = std::numeric_limits<int64_t>::max();
  int64_t end_ns_ = std::numeric_limits<int64_t>::min();
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_STEP_REPORT_BUILDER_H_
