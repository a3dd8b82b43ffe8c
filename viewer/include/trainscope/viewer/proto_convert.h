// Converts the collector's protos (analysis.proto, status.proto, loss.proto)
// into the viewer's plain records, at the edge, so the models never see
// protobuf. Loss maps are decoded from half floats here.
//
// Usage:
//   StepRecord step = ConvertStep(step_report);
//   OperatorBatchRecord ops = ConvertOperators(operator_batch);
//   JobRecord job = ConvertJob(job_status);
//   LossData loss = ConvertLossAnswer(answer, /*item=*/1432);
//
// Threading: pure functions.
#ifndef TRAINSCOPE_VIEWER_PROTO_CONVERT_H_
#define TRAINSCOPE_VIEWER_PROTO_CONVERT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"
#include "trainscope/v1/loss.pb.h"
#include "trainscope/v1/status.pb.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

StepRecord ConvertStep(const trainscope::v1::StepReport& report);
OperatorBatchRecord ConvertOperators(const trainscope::v1::OperatorBatch& batch);
// The collector's job state as the viewer names it (the collector decides it,
// job_state_rule.h; the viewer never guesses one of its own).
JobStateKind ConvertJobState(trainscope::v1::JobState state);
JobRecord ConvertJobSummary(const trainscope::v1::JobSummary& summary);
JobRecord ConvertJob(const trainscope::v1::JobStatus& status);
RankRecord ConvertRank(const trainscope::v1::RankStatus& rank);
// The alert as the alerts view lists it: the cause first among its ranks.
Alert ConvertAlert(const trainscope::v1::Alert& alert);
ThumbnailRecord ConvertThumbnail(const trainscope::v1::Thumbnail& thumbnail);
LossStateRecord ConvertLossState(const trainscope::v1::LossState& state);
// A map whose bytes are not height * width halves keeps its size but no
// values (LayerMapRecord).
ItemSnapshotRecord ConvertItemSnapshot(const trainscope::v1::ItemSnapshot& snapshot);
// The state and, when `item` is set (the query's want_item), that item's
// snapshots, oldest first (an empty list when the collector keeps none).
LossData ConvertLossAnswer(const trainscope::v1::LossAnswer& answer, std::optional<uint64_t> item);
// Devices with their stage (from the steps), host and rack (from `ranks`).
std::vector<DeviceInfo> DevicesOf(const std::vector<StepRecord>& steps,
                                  const std::vector<RankRecord>& ranks);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_PROTO_CONVERT_H_
