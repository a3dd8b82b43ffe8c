#include "trainscope/collector/store/data_dir_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace trainscope::collector {

namespace fs = std::filesystem;

absl::Status ErrnoToStatus(int error, absl::string_view message) {
  std::string text = absl::StrCat(message, ": ", std::strerror(error));
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(text);
    case EFBIG:  // a file size limit: more space will not help
      return absl::OutOfRangeError(text);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(text);
    case ENOENT:
      return absl::NotFoundError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::Status CreateDataDirectories(const fs::path& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("directory path is empty");
  // The missing components, outermost first.
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    struct stat info;
    if (::stat(p.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot create directory ", dir.string(), ": ", p.string(),
                         " exists and is not a directory"));
      }
      break;
    }
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), kDataDirMode) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create directory ", it->string(), ": ", std::strerror(errno)));
    }
    // mkdir's mode passes through the umask; the data directory's promise does not.
    if (::chmod(it->c_str(), kDataDirMode) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot set mode 0750 on directory ", it->string(), ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> OpenDataFile(const fs::path& path, int flags) {
  bool created = false;
  int fd = -1;
  if ((flags & O_CREAT) != 0 && (flags & O_EXCL) == 0) {
    // Tell a creation from an open of an existing file: only new files are chmod-ed.
    fd = ::open(path.c_str(), (flags & ~O_CREAT) | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      fd = ::open(path.c_str(), flags | O_EXCL | O_CLOEXEC, kDataFileMode);
      if (fd < 0 && errno == EEXIST) fd = ::open(path.c_str(), (flags & ~O_CREAT) | O_CLOEXEC);
      else created = fd >= 0;
    }
  } else {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, kDataFileMode);
    created = fd >= 0 && (flags & O_CREAT) != 0;
  }
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("cannot open ", path.string()));
  if (created && ::fchmod(fd, kDataFileMode) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoToStatus(error, absl::StrCat("cannot set mode 0640 on ", path.string()));
  }
  return fd;
}

absl::Status EnsureDataFile(const fs::path& path) {
  // A reader without write access (an operator's CLI) must not fail here.
  struct stat info;
  if (::stat(path.c_str(), &info) == 0) return absl::OkStatus();
  absl::StatusOr<int> fd = OpenDataFile(path, O_RDWR | O_CREAT);
  if (!fd.ok()) return fd.status();
  ::close(*fd);
  return absl::OkStatus();
}

}  // namespace trainscope::collector
