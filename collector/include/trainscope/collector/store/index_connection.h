// The connection to a data directory's SQLite index file: opens (creating)
// it with the data directory's file mode in WAL journal mode, with
// synchronous=NORMAL (the index is derived data: a power loss may lose its
// last transactions, never corrupt it) and a 5 s busy timeout (several
// connections, one per job pipeline, share the file), keeps -wal and -shm
// when it closes (a reader that may not write the directory cannot open a
// WAL database without them), and turns SQLite's errors into statuses that
// name the file: a full disk is RESOURCE_EXHAUSTED (callers keep the index
// and try again later), a damaged file DATA_LOSS.
//
// Usage:
//   ASSIGN_OR_RETURN(std::unique_ptr<IndexConnection> db, IndexConnection::Open(path));
//   RETURN_IF_ERROR(db->Exec("BEGIN", "cannot begin a transaction"));
//   SqliteStatement st;
//   RETURN_IF_ERROR(db->Prepare(&st, "DELETE FROM t WHERE k = ?1", "cannot prepare"));
//   st.Bind(1, key);
//   RETURN_IF_ERROR(db->Run(st, "cannot delete"));
//
// Threading: not thread-safe (SQLITE_OPEN_NOMUTEX); one owner.
#ifndef TRAINSCOPE_COLLECTOR_STORE_INDEX_CONNECTION_H_
#define TRAINSCOPE_COLLECTOR_STORE_INDEX_CONNECTION_H_

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/store/sqlite_statement.h"

namespace trainscope::collector {

class IndexConnection {
 public:
  // Creates the file and its parent directory if needed.
  static absl::StatusOr<std::unique_ptr<IndexConnection>> Open(const std::filesystem::path& path);
  ~IndexConnection();
  IndexConnection(const IndexConnection&) = delete;
  IndexConnection& operator=(const IndexConnection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::filesystem::path& path() const { return path_; }

  // The connection's last error, as "index <path>: <what>: <SQLite's words>".
  absl::Status Error(absl::string_view what) const;
  // Runs SQL without results (several statements allowed).
  absl::Status Exec(const std::string& sql, absl::string_view what);
  // Prepares `statement` on this connection.
  absl::Status Prepare(SqliteStatement* statement, const char* sql, absl::string_view what);
  // Runs a statement that returns no rows, then resets it.
  absl::Status Run(SqliteStatement& statement, absl::string_view what);

 private:
  explicit IndexConnection(std::filesystem::path path) : path_(std::move(path)) {}
  absl::Status Init();

  const std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_INDEX_CONNECTION_H_
