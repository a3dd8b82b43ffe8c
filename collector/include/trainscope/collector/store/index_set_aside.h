// The collector's start-up check of its index file: PRAGMA quick_check, and
// when the file is damaged or not a database, it (and its -wal and -shm) go
// aside as <file>.damaged-<unix seconds>, so that the index is opened anew
// and rebuilt from the job logs instead of the collector refusing to start.
// The damaged file is kept for a post-mortem, never deleted.
//
// Usage (before any IndexConnection opens the file):
//   ASSIGN_OR_RETURN(std::string what, CheckIndexOrSetAside(data_dir / "index.sqlite"));
//   if (!what.empty()) Notice(what);
//
// Threading: a function over one file; call it before connections open it.
#ifndef TRAINSCOPE_COLLECTOR_STORE_INDEX_SET_ASIDE_H_
#define TRAINSCOPE_COLLECTOR_STORE_INDEX_SET_ASIDE_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace trainscope::collector {

// Returns a line saying what was done: empty when the index is sound (or
// cannot be read for a reason other than damage, e.g. busy or no
// permission: opening it will say so); a missing index says it was missing.
// FAILED_PRECONDITION when a damaged file cannot be moved.
absl::StatusOr<std::string> CheckIndexOrSetAside(const std::filesystem::path& db_path);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_INDEX_SET_ASIDE_H_
