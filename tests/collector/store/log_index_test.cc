#include "trainscope/collector/store/log_index.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "store_test_util.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::ScopedTempDir;

std::unique_ptr<LogIndex> OpenOrDie(const fs::path& path) {
  absl::StatusOr<std::unique_ptr<LogIndex>> index = LogIndex::Open(path);
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? std::move(*index) : nullptr;
}

StreamProgress Progress(uint32_t rank, uint64_t instance, uint64_t events) {
  StreamProgress progress;
  progress.hello.set_rank(rank);
  progress.hello.set_agent_instance_id(instance);
  progress.hello.set_restart_count(1);
  progress.hello.set_host("node-" + std::to_string(rank));
  progress.hello.set_pid(4000 + rank);
  progress.hello.set_device("cuda:0");
  progress.hello.set_framework("pytorch");
  progress.last_sequence = events / 10;
  progress.batches = events / 10;
  progress.events = events;
  progress.bytes = events * 8;
  return progress;
}

// Runs one single-value query on a separate connection.
std::string QueryText(const fs::path& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string value;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

TEST(LogIndexTest, UpsertsAndListJobsAggregates) {
  ScopedTempDir tmp;
  auto index = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->UpsertJob("job-b", 200, 2).ok());
  ASSERT_TRUE(index->UpsertJob("job-a", 100, 4).ok());
  ASSERT_TRUE(index->UpsertStream("job-a", Progress(0, 1, 100)).ok());
  ASSERT_TRUE(index->UpsertStream("job-a", Progress(1, 2, 50)).ok());
  ASSERT_TRUE(index->UpsertStream("job-a", Progress(1, 2, 70)).ok());  // same stream: update
  ASSERT_TRUE(index->UpsertStream("job-a", Progress(1, 3, 5)).ok());   // rank restarted
  ASSERT_TRUE(index->UpsertStream("job-c", Progress(0, 9, 1)).ok());   // creates job-c

  absl::StatusOr<std::vector<IndexedJob>> jobs = index->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].job_id, "job-a");
  EXPECT_EQ((*jobs)[0].created_unix_ns, 100);
  EXPECT_EQ((*jobs)[0].world_size, 4u);
  EXPECT_EQ((*jobs)[0].streams, 3u);
  EXPECT_EQ((*jobs)[0].events, 175u);
  EXPECT_EQ((*jobs)[1].job_id, "job-b");
  EXPECT_EQ((*jobs)[1].streams, 0u);
  EXPECT_EQ((*jobs)[1].events, 0u);
  EXPECT_EQ((*jobs)[2].job_id, "job-c");
  EXPECT_EQ((*jobs)[2].events, 1u);
}

trainscope::v1::Alert MakeAlert(uint64_t id, trainscope::v1::AlertState state,
                                const std::string& rule, int64_t at_ns) {
  trainscope::v1::Alert alert;
  alert.set_job_id("job-a");
  alert.set_alert_id(id);
  alert.set_state(state);
  alert.set_rule(rule);
  alert.set_step(id * 10);
  alert.set_raised_unix_ns(at_ns);
  alert.add_ranks(static_cast<uint32_t>(id));
  alert.set_message(rule + " #" + std::to_string(id));
  return alert;
}

TEST(LogIndexTest, AlertsRoundTripInOrderWithFilters) {
  using trainscope::v1::ALERT_STATE_CLEARED;
  using trainscope::v1::ALERT_STATE_RAISED;
  ScopedTempDir tmp;
  auto index = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->InsertAlert(MakeAlert(1, ALERT_STATE_RAISED, "straggler", 100)).ok());
  ASSERT_TRUE(index->InsertAlert(MakeAlert(2, ALERT_STATE_RAISED, "slow_link", 200)).ok());
  ASSERT_TRUE(index->InsertAlert(MakeAlert(1, ALERT_STATE_CLEARED, "straggler", 300)).ok());
  trainscope::v1::Alert halted = MakeAlert(2, ALERT_STATE_RAISED, "slow_link", 200);
  halted.set_halted_job(true);
  ASSERT_TRUE(index->InsertAlert(halted).ok());  // same (id, state): replaced, not added

  absl::StatusOr<std::vector<trainscope::v1::Alert>> all =
      index->ListAlerts("job-a", trainscope::v1::AlertQuery());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].alert_id(), 1u);
  EXPECT_EQ((*all)[1].alert_id(), 2u);
  EXPECT_TRUE((*all)[1].halted_job());
  EXPECT_EQ((*all)[1].message(), "slow_link #2");
  EXPECT_EQ((*all)[2].state(), ALERT_STATE_CLEARED);

  trainscope::v1::AlertQuery open;
  open.set_open_only(true);
  absl::StatusOr<std::vector<trainscope::v1::Alert>> open_rows = index->ListAlerts("job-a", open);
  ASSERT_TRUE(open_rows.ok());
  ASSERT_EQ(open_rows->size(), 1u);
  EXPECT_EQ((*open_rows)[0].rule(), "slow_link");

  trainscope::v1::AlertQuery by_rule;
  by_rule.set_rule("straggler");
  by_rule.set_limit(1);
  absl::StatusOr<std::vector<trainscope::v1::Alert>> newest = index->ListAlerts("job-a", by_rule);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ((*newest)[0].state(), ALERT_STATE_CLEARED);

  trainscope::v1::AlertQuery after;
  after.set_after_alert_id(1);
  EXPECT_EQ(index->ListAlerts("job-a", after)->size(), 1u);
  EXPECT_TRUE(index->ListAlerts("job-b", trainscope::v1::AlertQuery())->empty());
}

TEST(LogIndexTest, UpsertJobKeepsEarliestCreationAndKnownWorldSize) {
  ScopedTempDir tmp;
  auto index = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_TRUE(index->UpsertJob("job", 0, 0).ok());
  ASSERT_TRUE(index->UpsertJob("job", 500, 8).ok());
  ASSERT_TRUE(index->UpsertJob("job", 300, 0).ok());
  ASSERT_TRUE(index->UpsertJob("job", 900, 0).ok());
  auto jobs = index->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].created_unix_ns, 300);
  EXPECT_EQ((*jobs)[0].world_size, 8u);
}

TEST(LogIndexTest, StreamsAndSegmentsRoundTrip) {
  ScopedTempDir tmp;
  auto index = OpenOrDie(tmp.path() / "index.sqlite");
  const uint64_t high_instance = 0xF00DFACE12345678ull;  // top bit set: stored bit for bit
  StreamProgress progress = Progress(3, high_instance, 1234);
  progress.goodbye = true;
  ASSERT_TRUE(index->UpsertStream("job", progress).ok());
  ASSERT_TRUE(index->UpsertSegment("job", "/data/job/segment-00000001.tslog", 5, 999, false, 50).ok());
  ASSERT_TRUE(
      index->UpsertSegment("job", "/data/job/segment-00000000.tslog", 10, 2048, false, 100).ok());
  ASSERT_TRUE(index->UpsertSegment("job", "/data/job/segment-00000000.tslog", 12, 4096, true, 120).ok());

  auto streams = index->ListStreams("job");
  ASSERT_TRUE(streams.ok()) << streams.status();
  ASSERT_EQ(streams->size(), 1u);
  const IndexedStream& stream = (*streams)[0];
  EXPECT_EQ(stream.rank, 3u);
  EXPECT_EQ(stream.agent_instance_id, high_instance);
  EXPECT_EQ(stream.restart_count, 1u);
  EXPECT_EQ(stream.host, "node-3");
  EXPECT_EQ(stream.pid, 4003u);
  EXPECT_EQ(stream.device, "cuda:0");
  EXPECT_EQ(stream.framework, "pytorch");
  EXPECT_EQ(stream.events, 1234u);
  EXPECT_EQ(stream.bytes, 1234u * 8);
  EXPECT_EQ(stream.last_sequence, 123u);
  EXPECT_TRUE(stream.goodbye);

  auto segments = index->ListSegments("job");
  ASSERT_TRUE(segments.ok()) << segments.status();
  ASSERT_EQ(segments->size(), 2u);
  EXPECT_EQ((*segments)[0].path, "/data/job/segment-00000000.tslog");
  EXPECT_EQ((*segments)[0].records, 12u);
  EXPECT_EQ((*segments)[0].bytes, 4096u);
  EXPECT_EQ((*segments)[0].events, 120u);
  EXPECT_TRUE((*segments)[0].sealed);
  EXPECT_FALSE((*segments)[1].sealed);
  auto none = index->ListSegments("other-job");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(LogIndexTest, ReopenKeepsDataAndUsesWal) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "nested" / "index.sqlite";
  {
    auto index = OpenOrDie(path);
    ASSERT_NE(index, nullptr);
    ASSERT_TRUE(index->UpsertJob("job", 42, 2).ok());
    ASSERT_TRUE(index->UpsertStream("job", Progress(0, 7, 10)).ok());
  }
  EXPECT_EQ(QueryText(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryText(path, "PRAGMA user_version"), std::to_string(LogIndex::kSchemaVersion));
  auto index = OpenOrDie(path);
  ASSERT_NE(index, nullptr);
  auto jobs = index->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].created_unix_ns, 42);
  EXPECT_EQ((*jobs)[0].events, 10u);
}

TEST(LogIndexTest, TwoConnectionsShareTheFile) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  auto first = OpenOrDie(path);
  auto second = OpenOrDie(path);
  ASSERT_TRUE(first->UpsertJob("job-1", 1, 1).ok());
  ASSERT_TRUE(second->UpsertJob("job-2", 2, 1).ok());
  auto jobs = first->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 2u);
}

TEST(LogIndexTest, NewerSchemaIsRefused) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  { ASSERT_NE(OpenOrDie(path), nullptr); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<LogIndex>> index = LogIndex::Open(path);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(index.status().message().find("99"), std::string::npos) << index.status();
}

TEST(LogIndexTest, UnusablePathNamesIt) {
  ScopedTempDir tmp;
  // A directory where the database file should be.
  const fs::path path = tmp.path() / "dir.sqlite";
  fs::create_directories(path);
  absl::StatusOr<std::unique_ptr<LogIndex>> index = LogIndex::Open(path);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find(path.string()), std::string::npos) << index.status();
}

}  // namespace
}  // namespace trainscope::collector
