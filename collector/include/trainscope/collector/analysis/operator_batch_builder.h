// Builds a trainscope.v1.OperatorBatch from OperatorRecords: re-interns the
// job-wide name ids into the batch's own string table, so a batch decodes on
// its own (feed topic "<job>/ops", MareyView.operators).
//
// Usage:
//   OperatorBatchBuilder builder(&strings, &view.mutable_operators());
//   for (const OperatorRecord& op : ops) builder.Add(op);
//   uint32_t name_index = builder.Intern(op.name);  // for AggregatedOperator
//
// GPU operators keep their device, stream, correlation and launching
// operator (interned like names); their thread is 0.
//
// Threading: not thread-safe; use on one thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_BATCH_BUILDER_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_BATCH_BUILDER_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "trainscope/collector/analysis/job_strings.h"
#include "trainscope/collector/analysis/operator_record.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class OperatorBatchBuilder {
 public:
  // `batch` receives the strings and operators; both pointers must outlive
  // the builder. Strings already in `batch` are not reused.
  OperatorBatchBuilder(const JobStrings* strings, trainscope::v1::OperatorBatch* batch);

  void Add(const OperatorRecord& op);
  // The batch-local index of job string `id` (adding it on first use).
  uint32_t Intern(uint32_t id);

  static void ToProto(const OperatorRecord& op, uint32_t name_index, uint32_t group_index,
                      trainscope::v1::AlignedOperator* out);

 private:
  const JobStrings* const strings_;
  trainscope::v1::OperatorBatch* const batch_;
  absl::flat_hash_map<uint32_t, uint32_t> index_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_OPERATOR_BATCH_BUILDER_H_
