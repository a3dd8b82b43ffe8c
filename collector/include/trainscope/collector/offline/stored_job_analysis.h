// A stored job, analysed: runs a job's durable log (<data_dir>/jobs/<job_id>)
// through a JobAnalyzer and returns it finished, ready for queries. The one
// place where the store and the analysis meet, so that neither library
// depends on the other (the analysis computes over records, the store reads
// them); its callers are the offline front ends: the viewer, export, report.
//
// Usage:
//   ASSIGN_OR_RETURN(auto analyzer, AnalyzeStoredJob(data_dir, "job-1", {}));
//   std::vector<v1::StepReport> steps = analyzer->Steps({});
//   v1::MareyView view = analyzer->Marey(query);
//
// Threading: a plain function; the analyzer it returns belongs to the caller's
// thread (see JobAnalyzer).
#ifndef TRAINSCOPE_COLLECTOR_OFFLINE_STORED_JOB_ANALYSIS_H_
#define TRAINSCOPE_COLLECTOR_OFFLINE_STORED_JOB_ANALYSIS_H_

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/analysis/job_analyzer.h"
#include "trainscope/collector/store/job_log.h"

namespace trainscope::collector {

// NOT_FOUND names the missing path. Ticks follow the log's own clock, so
// silent devices time out as they did live. `log_state`, when given, gets the
// log folded as a restarted collector folds it (its streams and commands: the
// job's state by StoredJobState, job_state_rule.h) from the same read.
absl::StatusOr<std::unique_ptr<JobAnalyzer>> AnalyzeStoredJob(const std::filesystem::path& data_dir,
                                                              absl::string_view job_id,
                                                              JobAnalyzerOptions options = {},
                                                              JobAnalyzerOutputs outputs = {},
                                                              JobLogState* log_state = nullptr);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_OFFLINE_STORED_JOB_ANALYSIS_H_
