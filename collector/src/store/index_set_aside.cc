#include "trainscope/collector/store/index_set_aside.h"

#include <sqlite3.h>

#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace trainscope::collector {

absl::StatusOr<std::string> CheckIndexOrSetAside(const std::filesystem::path& db_path) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) {
    return absl::StrCat("index ", db_path.string(),
                        " was missing: rebuilt from the job logs (jobs, streams, segments; "
                        "step metrics and alerts come back as jobs are analysed again)");
  }
  std::string problem;
  {
    sqlite3* db = nullptr;
    int rc =
        sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_busy_timeout(db, 5000);
      sqlite3_stmt* stmt = nullptr;
      rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &stmt, nullptr);
      if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
      if (rc == SQLITE_ROW) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        const std::string verdict = text != nullptr ? text : "";
        if (verdict != "ok") problem = absl::StrCat("quick_check says: ", verdict);
      } else {
        const int primary = rc & 0xFF;
        if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
          problem = sqlite3_errmsg(db);
        } else {
          // Busy, no permission...: not damage; let Open report it.
          sqlite3_finalize(stmt);
          sqlite3_close_v2(db);
          return std::string();
        }
      }
      sqlite3_finalize(stmt);
    } else {
      problem = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    }
    sqlite3_close_v2(db);
  }
  if (problem.empty()) return std::string();
  const std::string aside =
      absl::StrCat(db_path.string(), ".damaged-", absl::ToUnixSeconds(absl::Now()));
  std::filesystem::rename(db_path, aside, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("index ", db_path.string(), " is damaged (", problem,
                     ") and cannot be moved aside: ", ec.message()));
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::filesystem::path side = db_path.string() + suffix;
    if (std::filesystem::exists(side, ec)) {
      std::filesystem::rename(side, aside + suffix, ec);
    }
  }
  return absl::StrCat("index ", db_path.string(), " was damaged (", problem, "): moved to ", aside,
                      " and rebuilt from the job logs (jobs, streams, segments; step "
                      "metrics and alerts come back as jobs are analysed again)");
}

}  // namespace trainscope::collector
