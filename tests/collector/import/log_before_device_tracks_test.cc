// A job log written by the importer before the GPU event kinds and columns
// existed (commit 1782a89; trace_filter ranks 0 and 1) stays readable by
// today's log reader and analysis: the schema change is additive (new enum
// values, new repeated fields, absent in old batches), so no format version
// bump is needed, and this test keeps it so.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "stored_log_census.h"
#include "trainscope/collector/offline/stored_job_analysis.h"

namespace trainscope::collector {
namespace {

const std::filesystem::path kOldLog = LOG_BEFORE_DEVICE_TRACKS;

TEST(LogBeforeDeviceTracksTest, TodaysReaderGivesItsEventsCollectivesAndSteps) {
  const StoredLogCensus census = CountStoredLog(kOldLog);
  uint64_t events = 0;
  for (const auto& [kind, n] : census.kinds) events += n;
  EXPECT_EQ(events, 9487u);
  EXPECT_EQ(census.kinds.at(v1::EVENT_KIND_COLLECTIVE), 20u);
  EXPECT_EQ(census.kinds.at(v1::EVENT_KIND_STEP_MARK), 4u);
  EXPECT_EQ(census.gpu_events, 0u) << "no GPU events before the GPU kinds existed";
  EXPECT_EQ(census.bad_batches, 0u) << "old batches pass today's column rule";
  ASSERT_EQ(census.hellos.size(), 2u);
  EXPECT_EQ(census.hellos[0].gpus_size(), 0);
  EXPECT_EQ(census.events_by_rank.size(), 2u);
}

TEST(LogBeforeDeviceTracksTest, TodaysAnalysisAssemblesItsSteps) {
  // AnalyzeStoredJob reads <data_dir>/jobs/<job>: give the old segment one.
  const std::filesystem::path data =
      std::filesystem::temp_directory_path() / ("trainscope-old-log-" + std::to_string(::getpid()));
  std::filesystem::remove_all(data);
  std::filesystem::create_directories(data / "jobs" / "old");
  for (const auto& entry : std::filesystem::directory_iterator(kOldLog)) {
    std::filesystem::copy_file(entry.path(), data / "jobs" / "old" / entry.path().filename());
  }
  absl::StatusOr<std::unique_ptr<JobAnalyzer>> analyzer = AnalyzeStoredJob(data, "old");
  ASSERT_TRUE(analyzer.ok()) << analyzer.status();
  const std::vector<v1::StepReport> steps = (*analyzer)->Steps(v1::StepQuery());
  // ProfilerStep#551 and #552 on both ranks.
  ASSERT_GE(steps.size(), 2u);
  size_t with_both = 0;
  for (const v1::StepReport& s : steps) with_both += s.devices_size() == 2;
  EXPECT_GE(with_both, 2u);
  EXPECT_EQ((*analyzer)->hosts().size(), 2u);
  std::filesystem::remove_all(data);
}

}  // namespace
}  // namespace trainscope::collector
