#include "trainscope/collector/pipeline/finished_job_release.h"

namespace trainscope::collector {

void FinishedJobRelease::OnState(trainscope::v1::JobState state, absl::Time now) {
  if (state != trainscope::v1::JOB_STATE_FINISHED && state != trainscope::v1::JOB_STATE_LOST) {
    ended_since_.reset();
  } else if (!ended_since_) {
    ended_since_ = now;
  }
}

bool FinishedJobRelease::Due(absl::Time now) const {
  return ended_since_.has_value() && now - *ended_since_ >= release_after_;
}

}  // namespace trainscope::collector
