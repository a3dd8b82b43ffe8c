// Answers a MareyQuery from the OperatorStore with what the enhanced Marey's
// graph of Wei et al. draws:
//   - bins == 0: the operators in range, one by one (up to max_operators);
//   - bins > 0 (horizontal aggregation): the range is cut into `bins` equal
//     density bins per device; compute operators starting in a bin holding
//     more compute operators than the device's mean over its non-empty bins
//     merge into one MareyBin (count, busy = union of their intervals, FLOPs,
//     extent = first start .. last end); compute operators of sparser bins,
//     every communication operator (collective, send, recv) and all GPU work
//     (kernels, NCCL kernels, copies: a bin has no stream) stay individual;
//   - grouping STAGE or HOST (vertical aggregation): one MareyRow per group,
//     each operator aggregated over the group's devices (min/avg/max start and
//     end). "The same operator" on two devices is (step, name, occurrence of
//     that name within the step on the device, in start order). Rows replace
//     the per-device operators and bins (both left empty).
// A device's stage is the stage its operators were recorded with (the
// device's "pipeline.stage" when the step closed); hosts come from the caller.
//
// Usage:
//   MareyAggregator marey(&store, &strings);
//   trainscope::v1::MareyView view = marey.Build(query, hosts);  // rank -> host
//
// Threading: const; safe wherever the store may be read (the analysis thread).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_MAREY_AGGREGATOR_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_MAREY_AGGREGATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/operator_batch_builder.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/collector/analysis/operator_store.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

struct MareyAggregatorOptions {
  uint32_t default_max_operators = 200'000;  // when the query says 0
  uint32_t max_bins = 10'000;
};

class MareyAggregator {
 public:
  // Both pointers must outlive the aggregator.
  MareyAggregator(const OperatorStore* store, const JobStrings* strings,
                  MareyAggregatorOptions options = {});

  // `hosts` maps ranks to hosts (HOST grouping); ranks without one, or with
  // an empty name, group under "unknown".
  trainscope::v1::MareyView Build(const trainscope::v1::MareyQuery& query,
                                  const std::map<uint32_t, std::string>& hosts = {}) const;

 private:
  void BuildRaw(const OperatorRange& range, uint32_t max_operators,
                trainscope::v1::MareyView* view) const;
  void BuildBins(const OperatorRange& range, uint32_t bins, uint32_t max_operators,
                 trainscope::v1::MareyView* view) const;
  // Bins of one device's operators (start order); individual ones go to `out`.
  void BinDevice(const std::vector<const OperatorRecord*>& ops, bool raw, uint32_t bins,
                 uint32_t max_operators, OperatorBatchBuilder* out,
                 trainscope::v1::MareyView* view) const;
  void BuildRows(const OperatorRange& range, trainscope::v1::MareyGrouping grouping,
                 const std::map<uint32_t, std::string>& hosts, uint32_t max_operators,
                 trainscope::v1::MareyView* view) const;

  const OperatorStore* const store_;
  const JobStrings* const strings_;
  const MareyAggregatorOptions options_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_MAREY_AGGREGATOR_H_
