#include "trainscope/collector/store/data_dir_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "store_test_util.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/collector/store/log_index.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using testing::MakeBatch;
using testing::ScopedTempDir;

mode_t ModeOf(const fs::path& path) {
  struct stat info;
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

// Sets the umask for one test and restores it.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : saved_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(saved_); }

 private:
  mode_t saved_;
};

class DataDirModesTest : public ::testing::TestWithParam<mode_t> {};

// Whatever the umask (0: everything world-writable; 077: nothing for the
// group), the store's files are 0640 and its directories 0750.
TEST_P(DataDirModesTest, LogAndIndexFilesArePrivateToUserAndGroup) {
  ScopedTempDir tmp;
  ScopedUmask umask(GetParam());
  const fs::path data_dir = tmp.path() / "data";
  const fs::path job_dir = data_dir / "jobs" / "j";
  {
    auto log = JobLog::Open({.dir = job_dir, .segment_bytes = 200, .fsync = false}, nullptr);
    ASSERT_TRUE(log.ok()) << log.status();
    for (int i = 1; i <= 4; ++i) ASSERT_TRUE((*log)->Append(MakeBatch(0, 1, i, 20)).ok());
    ASSERT_TRUE((*log)->Sync().ok());
    ASSERT_GE((*log)->segments().size(), 2u) << "rotation creates segments too";
    auto index = LogIndex::Open(data_dir / "index.sqlite");
    ASSERT_TRUE(index.ok()) << index.status();
    ASSERT_TRUE((*index)->UpsertJob("j", 1, 1).ok());
    for (const fs::path& file :
         {data_dir / "index.sqlite", data_dir / "index.sqlite-wal", data_dir / "index.sqlite-shm"}) {
      ASSERT_TRUE(fs::exists(file)) << file;
      EXPECT_EQ(ModeOf(file), 0640u) << file;
    }
  }
  for (const fs::path& dir : {data_dir, data_dir / "jobs", job_dir}) {
    EXPECT_EQ(ModeOf(dir), 0750u) << dir;
  }
  int files = 0;
  for (const auto& entry : fs::directory_iterator(job_dir)) {
    EXPECT_EQ(ModeOf(entry.path()), 0640u) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 3) << "segments and LOCK";
}

INSTANTIATE_TEST_SUITE_P(Umasks, DataDirModesTest, ::testing::Values(0000, 0022, 0077));

TEST(DataDirFilesTest, ExistingDirectoriesKeepTheirMode) {
  ScopedTempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0711), 0);
  ASSERT_TRUE(CreateDataDirectories(tmp.path() / "a" / "b").ok());
  EXPECT_EQ(ModeOf(tmp.path()), 0711u) << "not ours to change";
  EXPECT_EQ(ModeOf(tmp.path() / "a"), 0750u);
  EXPECT_EQ(ModeOf(tmp.path() / "a" / "b"), 0750u);
}

TEST(DataDirFilesTest, ExistingFileKeepsItsMode) {
  ScopedTempDir tmp;
  const fs::path file = tmp.path() / "f";
  testing::WriteFile(file, "x");
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  absl::StatusOr<int> fd = OpenDataFile(file, O_RDWR | O_CREAT);
  ASSERT_TRUE(fd.ok()) << fd.status();
  ::close(*fd);
  EXPECT_EQ(ModeOf(file), 0600u);
}

TEST(DataDirFilesTest, AFileInTheWayIsNamed) {
  ScopedTempDir tmp;
  testing::WriteFile(tmp.path() / "file", "x");
  const absl::Status status = CreateDataDirectories(tmp.path() / "file" / "sub");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("file exists and is not a directory"), std::string::npos)
      << status;
}

TEST(DataDirFilesTest, DiskFullIsResourceExhausted) {
  EXPECT_EQ(ErrnoToStatus(ENOSPC, "write x").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(ErrnoToStatus(ENOSPC, "write x").message().find("write x: "), std::string::npos);
  EXPECT_EQ(ErrnoToStatus(EACCES, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoToStatus(EIO, "x").code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace trainscope::collector
