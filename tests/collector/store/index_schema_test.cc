#include "trainscope/collector/store/index_schema.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "store_test_util.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::ScopedTempDir;

std::unique_ptr<IndexConnection> OpenOrDie(const fs::path& path) {
  absl::StatusOr<std::unique_ptr<IndexConnection>> db = IndexConnection::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? std::move(*db) : nullptr;
}

int64_t Count(IndexConnection& db, const std::string& sql) {
  SqliteStatement st;
  EXPECT_TRUE(db.Prepare(&st, sql.c_str(), "count").ok()) << sql;
  return st.Step() == SQLITE_ROW ? st.Int(0) : -1;
}

int64_t Version(IndexConnection& db) { return Count(db, "PRAGMA user_version"); }

bool HasTable(IndexConnection& db, const std::string& table) {
  return Count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" + table +
                       "'") == 1;
}

TEST(IndexSchemaTest, AnEmptyDatabaseGetsEveryTable) {
  ScopedTempDir tmp;
  auto db = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(Version(*db), 0);
  ASSERT_TRUE(MigrateIndexSchema(*db).ok());
  EXPECT_EQ(Version(*db), kIndexSchemaVersion);
  for (const char* table : {"jobs", "streams", "segments", "device_steps", "alerts", "losses"}) {
    EXPECT_TRUE(HasTable(*db, table)) << table;
  }
  // A later migration's column.
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM pragma_table_info('segments') WHERE name = 'events'"),
            1);
}

TEST(IndexSchemaTest, MigratingAgainChangesNothing) {
  ScopedTempDir tmp;
  auto db = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(MigrateIndexSchema(*db).ok());
  ASSERT_TRUE(db->Exec("INSERT INTO jobs(job_id) VALUES('j')", "insert").ok());
  ASSERT_TRUE(MigrateIndexSchema(*db).ok());
  EXPECT_EQ(Version(*db), kIndexSchemaVersion);
  EXPECT_EQ(Count(*db, "SELECT count(*) FROM jobs"), 1);
}

TEST(IndexSchemaTest, ANewerDatabaseIsRefusedNamingItsVersion) {
  ScopedTempDir tmp;
  auto db = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->Exec("PRAGMA user_version = 99", "set version").ok());
  const absl::Status s = MigrateIndexSchema(*db);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("99"), std::string::npos) << s;
  EXPECT_EQ(Version(*db), 99);
}

TEST(IndexSchemaTest, AFailedMigrationLeavesTheDatabaseAtAWholeVersion) {
  ScopedTempDir tmp;
  auto db = OpenOrDie(tmp.path() / "index.sqlite");
  ASSERT_NE(db, nullptr);
  // A table in the way of the first migration's.
  ASSERT_TRUE(db->Exec("CREATE TABLE streams(x)", "create").ok());
  const absl::Status s = MigrateIndexSchema(*db);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("version 1"), std::string::npos) << s;
  EXPECT_EQ(Version(*db), 0);
  EXPECT_FALSE(HasTable(*db, "jobs"));  // created before the failure, rolled back
}

}  // namespace
}  // namespace trainscope::collector
