#include "trainscope/collector/store/index_set_aside.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "store_test_util.h"
#include "trainscope/collector/store/index_connection.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::ScopedTempDir;
using testing::WriteFile;

TEST(IndexSetAsideTest, AMissingIndexIsSaidToBeRebuilt) {
  ScopedTempDir tmp;
  absl::StatusOr<std::string> what = CheckIndexOrSetAside(tmp.path() / "index.sqlite");
  ASSERT_TRUE(what.ok()) << what.status();
  EXPECT_NE(what->find("missing"), std::string::npos) << *what;
}

TEST(IndexSetAsideTest, ASoundIndexStaysWhereItIs) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  {
    auto db = IndexConnection::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x); INSERT INTO t VALUES(1)", "fill").ok());
  }
  absl::StatusOr<std::string> what = CheckIndexOrSetAside(path);
  ASSERT_TRUE(what.ok()) << what.status();
  EXPECT_EQ(*what, "");
  EXPECT_TRUE(fs::exists(path));
}

TEST(IndexSetAsideTest, ADamagedIndexGoesAsideAndNoSideFileStays) {
  ScopedTempDir tmp;
  const fs::path path = tmp.path() / "index.sqlite";
  WriteFile(path, std::string(8192, 'x'));
  WriteFile(path.string() + "-wal", "wal");
  WriteFile(path.string() + "-shm", "shm");
  absl::StatusOr<std::string> what = CheckIndexOrSetAside(path);
  ASSERT_TRUE(what.ok()) << what.status();
  EXPECT_NE(what->find("was damaged"), std::string::npos) << *what;
  EXPECT_FALSE(fs::exists(path));
  // SQLite may drop side files it finds invalid while checking; any left go
  // aside with the file, none stays to confuse the new index.
  EXPECT_FALSE(fs::exists(path.string() + "-wal"));
  EXPECT_FALSE(fs::exists(path.string() + "-shm"));
  int aside = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(tmp.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("index.sqlite.damaged-", 0) == 0) ++aside;
  }
  EXPECT_GE(aside, 1) << "the file itself";
  // The damaged bytes are kept for a post-mortem.
  EXPECT_NE(what->find(".damaged-"), std::string::npos);
}

}  // namespace
}  // namespace trainscope::collector
