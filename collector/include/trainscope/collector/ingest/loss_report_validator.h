// Checks the loss-contribution reports a batch carries (loss.proto) before
// the batch is logged: counts and sizes bounded, every map and thumbnail as
// many bytes as its shape says, scores finite, labels and predictions >= -1.
//
// Usage (BatchValidator calls it for each batch):
//   absl::Status s = ValidateLossReports(batch, LossReportLimits{});
//
// Messages name the batch, the report, the field and the expectation, e.g.
//   "batch 7: loss_reports[0].snapshots[2].maps[1].contribution has 100 bytes,
//    expected 128 (8 x 8 half floats)".
// Threading: a pure function.
#ifndef TRAINSCOPE_COLLECTOR_INGEST_LOSS_REPORT_VALIDATOR_H_
#define TRAINSCOPE_COLLECTOR_INGEST_LOSS_REPORT_VALIDATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

struct LossReportLimits {
  uint32_t max_reports = 64;            // per batch
  uint32_t max_top_n = 4096;            // items per report's top list
  uint32_t max_snapshots = 1024;        // per report
  uint32_t max_maps = 16;               // monitored layers per snapshot
  uint32_t max_map_side = 1024;         // pixels per map side
  uint32_t max_thumbnail_side = 256;    // pixels per thumbnail side
  uint32_t max_layer_name_bytes = 256;
};

absl::Status ValidateLossReports(const trainscope::v1::EventBatch& batch,
                                 const LossReportLimits& limits = {});

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_INGEST_LOSS_REPORT_VALIDATOR_H_
