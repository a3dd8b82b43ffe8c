// Creating files and directories under the collector's --data-dir with the
// modes the data directory promises, whatever the process umask is.
//
// Everything the collector writes there is private to its user and group:
// files 0640, directories 0750. The group is how an operator's CLI reads a
// stored job (`trainscope steps --data-dir`) without being the collector's
// user: put the operator in the collector's group (or give --data-dir a
// setgid group directory). Job tokens stay 0600 (job_token.cc): they grant control.
//
// Usage:
//   RETURN_IF_ERROR(CreateDataDirectories(data_dir / "jobs" / job_id));
//   ASSIGN_OR_RETURN(int fd, OpenDataFile(path, O_WRONLY | O_CREAT | O_EXCL));
//
// Threading: plain functions over the filesystem, safe from any thread.
#ifndef TRAINSCOPE_COLLECTOR_STORE_DATA_DIR_FILES_H_
#define TRAINSCOPE_COLLECTOR_STORE_DATA_DIR_FILES_H_

#include <sys/types.h>

#include <filesystem>


#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainscope::collector {

inline constexpr mode_t kDataFileMode = 0640;
inline constexpr mode_t kDataDirMode = 0750;

// Creates `dir` and its missing parents with kDataDirMode. Directories that
// already exist keep their mode (the operator chose it, e.g. /tmp).
// FAILED_PRECONDITION naming the path when a component cannot be created or
// exists and is not a directory.
absl::Status CreateDataDirectories(const std::filesystem::path& dir);

// open(2) with O_CLOEXEC added; a file this call creates gets kDataFileMode
// exactly (fchmod after creation: the umask does not widen or narrow it).
// The error keeps errno's meaning in its code (see ErrnoToStatus).
absl::StatusOr<int> OpenDataFile(const std::filesystem::path& path, int flags);

// Creates `path` empty with kDataFileMode unless it exists (for files another
// library opens, e.g. SQLite's, which then inherits the mode for its -wal/-shm).
absl::Status EnsureDataFile(const std::filesystem::path& path);

// An errno as a status: ENOSPC/EDQUOT (space may come back) RESOURCE_EXHAUSTED,
// EFBIG OUT_OF_RANGE, EACCES/EPERM/EROFS PERMISSION_DENIED, ENOENT NOT_FOUND,
// others INTERNAL; the message is
// `message`: strerror.
absl::Status ErrnoToStatus(int error, absl::string_view message);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_DATA_DIR_FILES_H_
