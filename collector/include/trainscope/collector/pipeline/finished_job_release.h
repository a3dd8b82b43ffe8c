// When a finished job's analysis lets go of its operators: once the job has
// been over (its published state finished or lost) for release_after. Not at
// once: `trainscope export` and the viewer read a job that just ended from
// the live collector; not never: finished jobs would hold the collector's
// memory (the log keeps the operators for --data-dir readers). A job that
// runs again (a rank reconnects) starts the wait over.
//
// Usage (the pipeline thread, at each summary and each timer pass):
//   FinishedJobRelease release(options.release_finished_after);
//   release.OnState(summary.state(), now);
//   analysis->SetJobFinished(release.Due(now));
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_FINISHED_JOB_RELEASE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_FINISHED_JOB_RELEASE_H_

#include <optional>

#include "absl/time/time.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

class FinishedJobRelease {
 public:
  explicit FinishedJobRelease(absl::Duration release_after) : release_after_(release_after) {}

  // The state the job's summary says at `now`.
  void OnState(trainscope::v1::JobState state, absl::Time now);
  // Whether the job has been over for release_after at `now`.
  bool Due(absl::Time now) const;

 private:
  const absl::Duration release_after_;
  // Since when the job has said finished or lost; unset while it runs.
  std::optional<absl::Time> ended_since_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_FINISHED_JOB_RELEASE_H_
