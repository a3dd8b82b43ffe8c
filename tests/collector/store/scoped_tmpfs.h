// A small tmpfs mounted for one test: a real filesystem that fills up, for
// the disk-full paths (ENOSPC from write(2), then space coming back).
//
// Usage:
//   ScopedTmpfs fs(256 << 10);
//   if (!fs.mounted()) GTEST_SKIP() << fs.why_not();
//
// Mounting needs root (CAP_SYS_ADMIN); elsewhere why_not() says so and the
// test skips. Threading: one test thread.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_STORE_SCOPED_TMPFS_H_
#define TRAINSCOPE_TESTS_COLLECTOR_STORE_SCOPED_TMPFS_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace trainscope::collector::testing {

class ScopedTmpfs {
 public:
  explicit ScopedTmpfs(uint64_t size_bytes) {
    std::string pattern = ::testing::TempDir() + "trainscope-tmpfs-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      why_not_ = std::string("mkdtemp failed: ") + std::strerror(errno);
      return;
    }
    path_ = pattern;
    if (::geteuid() != 0) {
      why_not_ = "mounting a small tmpfs to fill up needs root (this test runs as uid " +
                 std::to_string(::geteuid()) + ")";
      return;
    }
    const std::string options = "size=" + std::to_string(size_bytes) + ",mode=0700";
    if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      why_not_ = std::string("cannot mount a tmpfs on ") + path_.string() + ": " +
                 std::strerror(errno) + " (a container without CAP_SYS_ADMIN?)";
      return;
    }
    mounted_ = true;
  }
  ~ScopedTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScopedTmpfs(const ScopedTmpfs&) = delete;
  ScopedTmpfs& operator=(const ScopedTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why_not() const { return why_not_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool mounted_ = false;
  std::string why_not_;
};

}  // namespace trainscope::collector::testing

#endif  // TRAINSCOPE_TESTS_COLLECTOR_STORE_SCOPED_TMPFS_H_
