// Converts the collector's protos (analysis.proto, status.proto) into the
// viewer's plain records, at the edge, so the models never see protobuf.
//
// Usage:
//   StepRecord step = ConvertStep(step_report);
//   OperatorBatchRecord ops = ConvertOperators(operator_batch);
//   JobRecord job = ConvertJob(job_status);
//
// Threading: pure functions.
#ifndef TRAINSCOPE_VIEWER_PROTO_CONVERT_H_
#define TRAINSCOPE_VIEWER_PROTO_CONVERT_H_

#include <map>
#include <string>
#include <vector>

#include "trainscope/v1/alerts.pb.h"
#include "trainscope/v1/analysis.pb.h"
#include "trainscope/v1/status.pb.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

StepRecord ConvertStep(const trainscope::v1::StepReport& report);
OperatorBatchRecord ConvertOperators(const trainscope::v1::OperatorBatch& batch);
JobRecord ConvertJobSummary(const trainscope::v1::JobSummary& summary);
JobRecord ConvertJob(const trainscope::v1::JobStatus& status);
RankRecord ConvertRank(const trainscope::v1::RankStatus& rank);
// The alert as the alerts view lists it: the cause first among its ranks.
Alert ConvertAlert(const trainscope::v1::Alert& alert);
// Devices with their stage (from the steps) and host (from `hosts`).
std::vector<DeviceInfo> DevicesOf(const std::vector<StepRecord>& steps,
                                  const std::map<uint32_t, std::string>& hosts);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_PROTO_CONVERT_H_
