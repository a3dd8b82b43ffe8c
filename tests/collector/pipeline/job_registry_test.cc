#include "trainscope/collector/pipeline/job_registry.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/base/mutex.h"
#include "trainscope/base/notification.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;
using testing::kWait;
using testing::ScopedTempDir;

class JobRegistryTest : public ::testing::Test {
 protected:
  std::unique_ptr<JobRegistry> Make(size_t max_jobs = 16) {
    JobPipelineOptions options;
    options.data_dir = dir_.path();
    options.fsync = false;
    options.use_index = false;
    options.probe_interval = absl::ZeroDuration();
    options.counters = &counters_;
    options.notice = [this](absl::string_view line) {
      base::MutexLock lock(&mu_);
      notices_.emplace_back(line);
    };
    return std::make_unique<JobRegistry>(options, max_jobs);
  }

  ScopedTempDir dir_;
  BadInputCounters counters_{absl::Seconds(10), nullptr, [](absl::string_view) {}};
  base::Mutex mu_;
  std::vector<std::string> notices_ ABSL_GUARDED_BY(mu_);
};

TEST_F(JobRegistryTest, UnknownJobInACommandIsNotFoundListingKnownJobs) {
  auto registry = Make();
  ASSERT_TRUE(registry->GetOrCreate("a").ok());
  ASSERT_TRUE(registry->GetOrCreate("b").ok());
  base::Notification done;
  absl::Status status;
  JobCommand halt;
  halt.token = "t";
  registry->RunCommand("nope", halt, "tester", [&](absl::StatusOr<v1::CommandReply> reply) {
    status = reply.status();
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "unknown job 'nope'; known jobs: a, b");
  EXPECT_EQ(counters_.count("command.job_id"), 1u);

  base::Notification status_done;
  registry->JobStatus("nope", "tester", [&](absl::StatusOr<v1::JobStatus> s) {
    EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
    status_done.Notify();
  });
  ASSERT_TRUE(status_done.WaitForNotificationWithTimeout(kWait));
}

TEST_F(JobRegistryTest, SnapshotsOfOneJobAllJobsAndAnUnknownJob) {
  auto registry = Make();
  ASSERT_TRUE(registry->GetOrCreate("a").ok());
  ASSERT_TRUE(registry->GetOrCreate("b").ok());
  v1::SnapshotRequest request;
  v1::FeedSnapshot all = registry->Snapshot(request, kWait);
  EXPECT_TRUE(all.error().empty()) << all.error();
  EXPECT_EQ(all.jobs_size(), 2);
  request.set_job_id("b");
  v1::FeedSnapshot one = registry->Snapshot(request, kWait);
  ASSERT_EQ(one.jobs_size(), 1);
  EXPECT_EQ(one.jobs(0).summary().job_id(), "b");
  request.set_job_id("zzz");
  v1::FeedSnapshot unknown = registry->Snapshot(request, kWait);
  EXPECT_EQ(unknown.jobs_size(), 0);
  EXPECT_THAT(unknown.error(), HasSubstr("unknown job 'zzz'"));
}

TEST_F(JobRegistryTest, RecoverJobsReopensEveryJobOnDisk) {
  {
    auto registry = Make();
    ASSERT_TRUE(registry->GetOrCreate("first").ok());
    ASSERT_TRUE(registry->GetOrCreate("second").ok());
  }
  auto registry = Make();
  ASSERT_TRUE(registry->RecoverJobs().ok());
  EXPECT_TRUE(registry->Find("first").ok());
  EXPECT_TRUE(registry->Find("second").ok());
  EXPECT_EQ(registry->ListJobs().size(), 2u);
  base::MutexLock lock(&mu_);
  bool reported = false;
  for (const auto& line : notices_)
    reported |= line.find("recovered job first") != std::string::npos;
  EXPECT_TRUE(reported);
}

TEST_F(JobRegistryTest, JobCountIsBounded) {
  auto registry = Make(/*max_jobs=*/1);
  ASSERT_TRUE(registry->GetOrCreate("a").ok());
  absl::StatusOr<JobPipeline*> second = registry->GetOrCreate("b");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(registry->GetOrCreate("a").ok());  // existing jobs still resolve
}

}  // namespace
}  // namespace trainscope::collector

namespace trainscope::collector {
namespace {

// Sets every file of `dir` (and `dir`) to have been last written `age` ago.
void Age(const std::filesystem::path& dir, absl::Duration age) {
  const auto when = std::filesystem::file_time_type::clock::now() -
                    std::chrono::seconds(absl::ToInt64Seconds(age));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    std::filesystem::last_write_time(entry.path(), when);
  }
  std::filesystem::last_write_time(dir, when);
}

TEST_F(JobRegistryTest, RetentionRemovesOldJobsButNeverALiveOne) {
  auto registry = Make();
  JobPipeline* old_job = *registry->GetOrCreate("old");
  JobPipeline* live_job = *registry->GetOrCreate("live");
  ASSERT_TRUE(registry->GetOrCreate("new").ok());
  auto stream = std::make_shared<testing::FakeAgentStream>();
  base::Notification attached;
  ASSERT_TRUE(live_job
                  ->Attach({testing::MakeHello("live", 0, 1, 7), stream, "peer"},
                           [&](absl::StatusOr<AttachResult> r) {
                             EXPECT_TRUE(r.ok()) << r.status();
                             attached.Notify();
                           })
                  .ok());
  ASSERT_TRUE(attached.WaitForNotificationWithTimeout(kWait));
  const absl::Duration kDay = absl::Hours(24);
  Age(dir_.path() / "jobs" / "old", 40 * kDay);
  Age(dir_.path() / "jobs" / "live", 40 * kDay);  // idle for long, but connected

  EXPECT_EQ(registry->ApplyRetention({.max_age = 30 * kDay}, absl::Now()), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "jobs" / "old"));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / "jobs" / "live"));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / "jobs" / "new"));
  std::vector<std::string> listed;
  for (const v1::JobSummary& job : registry->ListJobs()) listed.push_back(job.job_id());
  EXPECT_EQ(listed, (std::vector<std::string>{"live", "new"}));
  {
    base::MutexLock lock(&mu_);
    bool said = false;
    for (const std::string& line : notices_) {
      said = said || line.find("retention: removed job old") != std::string::npos;
    }
    EXPECT_TRUE(said);
  }
  // The retired pipeline stays a valid object: it refuses politely.
  base::Notification snapshot;
  old_job->Snapshot([&](v1::JobStatus status) {
    EXPECT_EQ(status.summary().job_id(), "old");
    snapshot.Notify();
  });
  ASSERT_TRUE(snapshot.WaitForNotificationWithTimeout(kWait));
  // A new job of that name starts afresh.
  ASSERT_TRUE(registry->GetOrCreate("old").ok());
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / "jobs" / "old"));
  // No limits: nothing removed.
  EXPECT_EQ(registry->ApplyRetention({}, absl::Now() + 1000 * kDay), 0u);
}

// Refused joins for a job id nobody has created wait for it, without creating
// it, and a flood of made-up job ids keeps only the newest kMaxPendingRefusalJobs.
TEST_F(JobRegistryTest, RefusedHellosWaitForTheirJobWithinABound) {
  auto registry = Make();
  const size_t bound = JobRegistry::kMaxPendingRefusalJobs;
  registry->CountRefusedHello("real", "no proof", "peer a");
  registry->CountRefusedHello("real", "wrong proof", "peer b");
  for (size_t i = 0; i < bound; ++i) {
    registry->CountRefusedHello(absl::StrCat("flood-", i), "no proof", "peer c");
  }
  EXPECT_TRUE(registry->Jobs().empty());  // nothing created
  auto refused = [&](const std::string& job) {
    absl::StatusOr<JobPipeline*> pipeline = registry->GetOrCreate(job);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    base::Notification done;
    v1::JobSummary summary;
    (*pipeline)->Snapshot([&](v1::JobStatus status) {
      summary = status.summary();
      done.Notify();
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    return summary;
  };
  // "real" was the oldest of bound + 1 job ids: it gave way.
  EXPECT_EQ(refused("real").hellos_refused(), 0u);
  const v1::JobSummary newest = refused(absl::StrCat("flood-", bound - 1));
  EXPECT_EQ(newest.hellos_refused(), 1u);
  EXPECT_EQ(newest.last_hello_refusal_from(), "peer c");
  // Every refusal for the id is counted; the last one says why and from where.
  registry->CountRefusedHello("late", "wrong proof", "peer d");
  registry->CountRefusedHello("late", "no proof", "peer e");
  const v1::JobSummary late = refused("late");
  EXPECT_EQ(late.hellos_refused(), 2u);
  EXPECT_EQ(late.last_hello_refusal(), "no proof");
  EXPECT_EQ(late.last_hello_refusal_from(), "peer e");
}

}  // namespace
}  // namespace trainscope::collector
