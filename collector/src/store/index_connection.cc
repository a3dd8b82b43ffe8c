#include "trainscope/collector/store/index_connection.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/store/data_dir_files.h"

namespace trainscope::collector {

absl::StatusOr<std::unique_ptr<IndexConnection>> IndexConnection::Open(
    const std::filesystem::path& path) {
  std::unique_ptr<IndexConnection> connection(new IndexConnection(path));
  if (absl::Status s = connection->Init(); !s.ok()) return s;
  return connection;
}

IndexConnection::~IndexConnection() { sqlite3_close_v2(db_); }

absl::Status IndexConnection::Error(absl::string_view what) const {
  std::string message =
      absl::StrCat("index ", path_.string(), ": ", what, ": ", sqlite3_errmsg(db_));
  // A full disk passes: callers keep the index and try again later.
  if ((sqlite3_errcode(db_) & 0xFF) == SQLITE_FULL) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::Status IndexConnection::Exec(const std::string& sql, absl::string_view what) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const bool full = (sqlite3_errcode(db_) & 0xFF) == SQLITE_FULL;
    absl::Status status =
        absl::Status(full ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal,
                     absl::StrCat("index ", path_.string(), ": ", what, ": ",
                                  message != nullptr ? message : "unknown error"));
    sqlite3_free(message);
    return status;
  }
  return absl::OkStatus();
}

absl::Status IndexConnection::Prepare(SqliteStatement* statement, const char* sql,
                                      absl::string_view what) {
  if (statement->Prepare(db_, sql) != SQLITE_OK) return Error(what);
  return absl::OkStatus();
}

absl::Status IndexConnection::Run(SqliteStatement& statement, absl::string_view what) {
  const int rc = statement.Step();
  absl::Status status = rc == SQLITE_DONE ? absl::OkStatus() : Error(what);
  statement.Reset();
  return status;
}

absl::Status IndexConnection::Init() {
  if (path_.has_parent_path()) {
    if (absl::Status s = CreateDataDirectories(path_.parent_path()); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create the directory of index ", path_.string(), ": ", s.message()));
    }
  }
  // Created here with the data directory's mode; SQLite gives its -wal and
  // -shm files the database file's mode.
  if (absl::Status s = EnsureDataFile(path_); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create index ", path_.string(), ": ", s.message()));
  }
  const int rc =
      sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open index ", path_.string(), ": ",
                     db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(db_, 5000);
  sqlite3_extended_result_codes(db_, 1);

  {
    SqliteStatement journal;  // scoped: an unfinished statement would block a COMMIT
    if (journal.Prepare(db_, "PRAGMA journal_mode = WAL") != SQLITE_OK ||
        journal.Step() != SQLITE_ROW) {
      const int primary = sqlite3_errcode(db_) & 0xFF;
      if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
        return absl::DataLossError(absl::StrCat(
            "index ", path_.string(), " is damaged (", sqlite3_errmsg(db_),
            "): restart trainscope-collector on this data directory to set it aside and "
            "rebuild it from the job logs"));
      }
      return Error("cannot switch to WAL journal mode");
    }
    if (journal.Text(0) != "wal") {
      return absl::FailedPreconditionError(
          absl::StrCat("index ", path_.string(), ": journal mode is '", journal.Text(0),
                       "', expected 'wal' (is the file on a filesystem without shared memory?)"));
    }
  }
  // Keep -wal and -shm when the connection closes: without them a reader
  // that may not write the directory (an operator's CLI in the collector's
  // group) cannot open a WAL database at all.
  int persist_wal = 1;
  sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
  return Exec("PRAGMA synchronous = NORMAL", "cannot set synchronous");
}

}  // namespace trainscope::collector
