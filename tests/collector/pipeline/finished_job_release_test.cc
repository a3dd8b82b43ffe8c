#include "trainscope/collector/pipeline/finished_job_release.h"

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

TEST(FinishedJobReleaseTest, ARunningJobIsNeverReleased) {
  FinishedJobRelease release(absl::ZeroDuration());
  EXPECT_FALSE(release.Due(kStart));
  release.OnState(v1::JOB_STATE_RUNNING, kStart);
  EXPECT_FALSE(release.Due(kStart + absl::Hours(1)));
  release.OnState(v1::JOB_STATE_IDLE, kStart);
  EXPECT_FALSE(release.Due(kStart + absl::Hours(1)));
}

TEST(FinishedJobReleaseTest, AFinishedOrLostJobIsReleasedAfterTheWait) {
  for (v1::JobState ended : {v1::JOB_STATE_FINISHED, v1::JOB_STATE_LOST}) {
    FinishedJobRelease release(absl::Minutes(10));
    release.OnState(ended, kStart);
    // Later summaries saying the same do not restart the wait.
    release.OnState(ended, kStart + absl::Minutes(5));
    EXPECT_FALSE(release.Due(kStart + absl::Minutes(10) - absl::Nanoseconds(1)));
    EXPECT_TRUE(release.Due(kStart + absl::Minutes(10)));
  }
}

TEST(FinishedJobReleaseTest, AJobThatRunsAgainStartsTheWaitOver) {
  FinishedJobRelease release(absl::Minutes(10));
  release.OnState(v1::JOB_STATE_FINISHED, kStart);
  release.OnState(v1::JOB_STATE_RUNNING, kStart + absl::Minutes(1));  // a rank came back
  EXPECT_FALSE(release.Due(kStart + absl::Minutes(10)));
  release.OnState(v1::JOB_STATE_LOST, kStart + absl::Minutes(2));
  EXPECT_FALSE(release.Due(kStart + absl::Minutes(11)));
  EXPECT_TRUE(release.Due(kStart + absl::Minutes(12)));
}

TEST(FinishedJobReleaseTest, AZeroWaitReleasesAtOnce) {
  FinishedJobRelease release(absl::ZeroDuration());
  release.OnState(v1::JOB_STATE_FINISHED, kStart);
  EXPECT_TRUE(release.Due(kStart));
}

}  // namespace
}  // namespace trainscope::collector
