#include "trainscope/collector/store/index_schema.h"

#include <sqlite3.h>

#include <cstdint>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"

namespace trainscope::collector {
namespace {

// Schema migrations: kMigrations[v] takes a database from user_version v to v + 1.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE jobs(
  job_id TEXT PRIMARY KEY NOT NULL,
  created_unix_ns INTEGER NOT NULL DEFAULT 0,
  world_size INTEGER NOT NULL DEFAULT 0);
CREATE TABLE streams(
  job_id TEXT NOT NULL,
  rank INTEGER NOT NULL,
  agent_instance_id INTEGER NOT NULL,
  restart_count INTEGER NOT NULL DEFAULT 0,
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  device TEXT NOT NULL DEFAULT '',
  framework TEXT NOT NULL DEFAULT '',
  last_sequence INTEGER NOT NULL DEFAULT 0,
  batches INTEGER NOT NULL DEFAULT 0,
  events INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0,
  goodbye INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(job_id, rank, agent_instance_id));
CREATE TABLE segments(
  job_id TEXT NOT NULL,
  path TEXT PRIMARY KEY NOT NULL,
  records INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0,
  sealed INTEGER NOT NULL DEFAULT 0);
CREATE INDEX segments_by_job ON segments(job_id);
)sql",
    R"sql(
CREATE TABLE device_steps(
  job_id TEXT NOT NULL,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  stage INTEGER NOT NULL DEFAULT 0,
  start_ns INTEGER NOT NULL DEFAULT 0,
  step_time_ns INTEGER NOT NULL DEFAULT 0,
  data_wait_ns INTEGER NOT NULL DEFAULT 0,
  compute_ns INTEGER NOT NULL DEFAULT 0,
  wait_ns INTEGER NOT NULL DEFAULT 0,
  transfer_ns INTEGER NOT NULL DEFAULT 0,
  idle_ns INTEGER NOT NULL DEFAULT 0,
  flops INTEGER NOT NULL DEFAULT 0,
  peak_memory_bytes INTEGER NOT NULL DEFAULT 0,
  complete INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY(job_id, step, rank));
)sql",
    // The whole Alert is kept as its serialized proto; the columns are for queries.
    R"sql(
CREATE TABLE alerts(
  job_id TEXT NOT NULL,
  alert_id INTEGER NOT NULL,
  state INTEGER NOT NULL,
  rule TEXT NOT NULL,
  step INTEGER NOT NULL,
  raised_unix_ns INTEGER NOT NULL,
  alert BLOB NOT NULL,
  PRIMARY KEY(job_id, alert_id, state));
)sql",
    // Events per segment, and the losses recovery found (recovery_audit.cc).
    R"sql(
ALTER TABLE segments ADD COLUMN events INTEGER NOT NULL DEFAULT 0;
CREATE TABLE losses(
  job_id TEXT NOT NULL,
  found_unix_ns INTEGER NOT NULL,
  segment TEXT NOT NULL,
  rank INTEGER NOT NULL,
  problem TEXT NOT NULL,
  records INTEGER NOT NULL,
  events INTEGER NOT NULL,
  bytes INTEGER NOT NULL);
CREATE INDEX losses_by_job ON losses(job_id);
)sql",
};
static_assert(std::size(kMigrations) == kIndexSchemaVersion);

}  // namespace

absl::Status MigrateIndexSchema(IndexConnection& db) {
  int64_t version = 0;
  {
    // Finalized before migrating: COMMIT fails while a statement is active.
    SqliteStatement version_query;
    if (absl::Status s =
            db.Prepare(&version_query, "PRAGMA user_version", "cannot read the schema version");
        !s.ok()) {
      return s;
    }
    if (version_query.Step() != SQLITE_ROW) {
      return db.Error("cannot read the schema version");
    }
    version = version_query.Int(0);
  }
  if (version > kIndexSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "index ", db.path().string(), " has schema version ", version, "; this build knows up to ",
        kIndexSchemaVersion, " (written by a newer trainscope?)"));
  }
  for (int64_t from = version; from < kIndexSchemaVersion; ++from) {
    // One transaction per step: a crash leaves the database at a whole version.
    const std::string sql = absl::StrCat("BEGIN IMMEDIATE;", kMigrations[from],
                                         "PRAGMA user_version = ", from + 1, "; COMMIT;");
    if (absl::Status migrated =
            db.Exec(sql, absl::StrCat("cannot migrate schema to version ", from + 1));
        !migrated.ok()) {
      (void)db.Exec("ROLLBACK", "rollback");
      return migrated;
    }
  }
  return absl::OkStatus();
}

}  // namespace trainscope::collector
