#include "trainscope/collector/store/index_connection.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "store_test_util.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::ScopedTempDir;

std::string Pragma(IndexConnection& db, const char* sql) {
  SqliteStatement st;
  EXPECT_TRUE(db.Prepare(&st, sql, "pragma").ok());
  return st.Step() == SQLITE_ROW ? st.Text(0) : "";
}

TEST(IndexConnectionTest, CreatesTheFileInWalModeWithNormalSync) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "nested" / "index.sqlite";
  absl::StatusOr<std::unique_ptr<IndexConnection>> db = IndexConnection::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ((*db)->path(), path);
  EXPECT_EQ(Pragma(**db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(Pragma(**db, "PRAGMA synchronous"), "1");  // NORMAL
  EXPECT_EQ(Pragma(**db, "PRAGMA busy_timeout"), "5000");
}

TEST(IndexConnectionTest, KeepsTheWalFilesWhenItCloses) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  {
    absl::StatusOr<std::unique_ptr<IndexConnection>> db = IndexConnection::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x)", "create").ok());
  }
  EXPECT_TRUE(fs::exists(path.string() + "-wal"));
  EXPECT_TRUE(fs::exists(path.string() + "-shm"));
}

TEST(IndexConnectionTest, ErrorsNameTheFileAndWhatFailed) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  absl::StatusOr<std::unique_ptr<IndexConnection>> db = IndexConnection::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  const absl::Status exec = (*db)->Exec("SELEKT 1", "cannot do the thing");
  EXPECT_EQ(exec.code(), absl::StatusCode::kInternal);
  EXPECT_NE(exec.message().find(path.string()), std::string::npos) << exec;
  EXPECT_NE(exec.message().find("cannot do the thing"), std::string::npos) << exec;

  SqliteStatement st;
  const absl::Status prepared = (*db)->Prepare(&st, "SELECT * FROM missing", "cannot prepare x");
  EXPECT_NE(prepared.message().find("cannot prepare x"), std::string::npos) << prepared;
  EXPECT_NE(prepared.message().find("missing"), std::string::npos) << prepared;

  ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x UNIQUE)", "create").ok());
  SqliteStatement insert;
  ASSERT_TRUE((*db)->Prepare(&insert, "INSERT INTO t VALUES(1)", "prepare").ok());
  EXPECT_TRUE((*db)->Run(insert, "first").ok());
  const absl::Status again = (*db)->Run(insert, "cannot insert twice");  // reset in between
  EXPECT_NE(again.message().find("cannot insert twice"), std::string::npos) << again;
  EXPECT_NE(again.message().find("UNIQUE"), std::string::npos) << again;
}

TEST(IndexConnectionTest, ADamagedFileIsDataLoss) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  testing::WriteFile(path, std::string(8192, 'x'));
  const absl::Status s = IndexConnection::Open(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("set it aside"), std::string::npos) << s;
}

TEST(IndexConnectionTest, ADirectoryInPlaceOfTheFileIsNamed) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "dir.sqlite";
  fs::create_directories(path);
  const absl::Status s = IndexConnection::Open(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find(path.string()), std::string::npos) << s;
}

}  // namespace
}  // namespace trainscope::collector
