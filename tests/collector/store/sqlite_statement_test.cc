#include "trainscope/collector/store/sqlite_statement.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

namespace trainscope::collector {
namespace {

class SqliteStatementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db_, "CREATE TABLE t(k INTEGER, s TEXT, b BLOB)", nullptr, nullptr, nullptr),
        SQLITE_OK);
  }
  void TearDown() override { sqlite3_close(db_); }
  sqlite3* db_ = nullptr;
};

TEST_F(SqliteStatementTest, RunsAgainAfterReset) {
  SqliteStatement insert;
  ASSERT_EQ(insert.Prepare(db_, "INSERT INTO t(k, s, b) VALUES(?1, ?2, ?3)"), SQLITE_OK);
  for (int64_t k : {int64_t{-5}, int64_t{1} << 40}) {
    insert.Bind(1, k);
    insert.Bind(2, std::string("row ") + std::to_string(k));
    insert.BindBlob(3, std::string("\x00\x01", 2));
    EXPECT_EQ(insert.Step(), SQLITE_DONE);
    insert.Reset();
  }
  SqliteStatement select;
  ASSERT_EQ(select.Prepare(db_, "SELECT k, s, length(b) FROM t ORDER BY k"), SQLITE_OK);
  ASSERT_EQ(select.Step(), SQLITE_ROW);
  EXPECT_EQ(select.Int(0), -5);
  EXPECT_EQ(select.Text(1), "row -5");
  EXPECT_EQ(select.Int(2), 2);
  ASSERT_EQ(select.Step(), SQLITE_ROW);
  EXPECT_EQ(select.Int(0), int64_t{1} << 40);
  EXPECT_EQ(select.Step(), SQLITE_DONE);
}

TEST_F(SqliteStatementTest, ResetClearsTheBindings) {
  SqliteStatement insert;
  ASSERT_EQ(insert.Prepare(db_, "INSERT INTO t(k, s) VALUES(?1, ?2)"), SQLITE_OK);
  insert.Bind(1, 7);
  insert.Bind(2, std::string("seven"));
  ASSERT_EQ(insert.Step(), SQLITE_DONE);
  insert.Reset();
  ASSERT_EQ(insert.Step(), SQLITE_DONE);  // nothing bound: NULLs
  insert.Reset();
  SqliteStatement select;
  ASSERT_EQ(select.Prepare(db_, "SELECT count(*) FROM t WHERE k IS NULL AND s IS NULL"), SQLITE_OK);
  ASSERT_EQ(select.Step(), SQLITE_ROW);
  EXPECT_EQ(select.Int(0), 1);
}

TEST_F(SqliteStatementTest, TextKeepsEmbeddedNulsAndNullIsEmpty) {
  SqliteStatement select;
  ASSERT_EQ(select.Prepare(db_, "SELECT ?1, NULL"), SQLITE_OK);
  select.Bind(1, std::string("a\0b", 3));
  ASSERT_EQ(select.Step(), SQLITE_ROW);
  EXPECT_EQ(select.Text(0), std::string("a\0b", 3));
  EXPECT_EQ(select.Text(1), "");
}

TEST_F(SqliteStatementTest, ABadStatementSaysSo) {
  SqliteStatement bad;
  EXPECT_NE(bad.Prepare(db_, "SELEKT nonsense"), SQLITE_OK);
  EXPECT_EQ(bad.get(), nullptr);
}

}  // namespace
}  // namespace trainscope::collector
