#include "trainscope/collector/store/log_index.h"

#include <sqlite3.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "trainscope/collector/store/alert_selection.h"
#include "trainscope/collector/store/index_connection.h"
#include "trainscope/collector/store/index_schema.h"
#include "trainscope/collector/store/index_set_aside.h"
#include "trainscope/collector/store/sqlite_statement.h"

namespace trainscope::collector {
namespace {

// SQLite integers are signed 64-bit; unsigned counters and ids are stored bit for bit.
int64_t ToSql(uint64_t value) { return static_cast<int64_t>(value); }
uint64_t FromSql(int64_t value) { return static_cast<uint64_t>(value); }

constexpr const char* kUpsertJob = R"sql(
INSERT INTO jobs(job_id, created_unix_ns, world_size) VALUES(?1, ?2, ?3)
ON CONFLICT(job_id) DO UPDATE SET
  created_unix_ns = CASE
    WHEN jobs.created_unix_ns = 0 THEN excluded.created_unix_ns
    WHEN excluded.created_unix_ns = 0 THEN jobs.created_unix_ns
    ELSE MIN(jobs.created_unix_ns, excluded.created_unix_ns) END,
  world_size = CASE WHEN excluded.world_size = 0 THEN jobs.world_size
                    ELSE excluded.world_size END)sql";
constexpr const char* kEnsureJob = "INSERT OR IGNORE INTO jobs(job_id) VALUES(?1)";
constexpr const char* kUpsertStream = R"sql(
INSERT INTO streams(job_id, rank, agent_instance_id, restart_count, host, pid, device, framework,
                    last_sequence, batches, events, bytes, goodbye)
VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
ON CONFLICT(job_id, rank, agent_instance_id) DO UPDATE SET
  restart_count = excluded.restart_count, host = excluded.host, pid = excluded.pid,
  device = excluded.device, framework = excluded.framework,
  last_sequence = excluded.last_sequence, batches = excluded.batches, events = excluded.events,
  bytes = excluded.bytes, goodbye = excluded.goodbye)sql";
constexpr const char* kUpsertSegment = R"sql(
INSERT INTO segments(job_id, path, records, bytes, sealed, events) VALUES(?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT(path) DO UPDATE SET
  job_id = excluded.job_id, records = excluded.records, bytes = excluded.bytes,
  sealed = excluded.sealed, events = excluded.events)sql";
constexpr const char* kDeleteSegment = "DELETE FROM segments WHERE path = ?1";
constexpr const char* kInsertLoss = R"sql(
INSERT INTO losses(job_id, found_unix_ns, segment, rank, problem, records, events, bytes)
VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql";
constexpr const char* kListLosses = R"sql(
SELECT found_unix_ns, segment, rank, problem, records, events, bytes FROM losses
WHERE job_id = ?1 ORDER BY rowid)sql";
constexpr const char* kListJobs = R"sql(
SELECT j.job_id, j.created_unix_ns, j.world_size, COUNT(s.rank), COALESCE(SUM(s.events), 0)
FROM jobs j LEFT JOIN streams s ON s.job_id = j.job_id
GROUP BY j.job_id ORDER BY j.job_id)sql";
constexpr const char* kListStreams = R"sql(
SELECT rank, agent_instance_id, restart_count, host, pid, device, framework, last_sequence,
       batches, events, bytes, goodbye
FROM streams WHERE job_id = ?1 ORDER BY rank, agent_instance_id)sql";
constexpr const char* kListSegments = R"sql(
SELECT path, records, bytes, sealed, events FROM segments WHERE job_id = ?1 ORDER BY path)sql";
constexpr const char* kUpsertDeviceStep = R"sql(
INSERT OR REPLACE INTO device_steps(job_id, step, rank, stage, start_ns, step_time_ns,
  data_wait_ns, compute_ns, wait_ns, transfer_ns, idle_ns, flops, peak_memory_bytes, complete)
VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14))sql";
constexpr const char* kListDeviceSteps = R"sql(
SELECT step, rank, stage, start_ns, step_time_ns, data_wait_ns, compute_ns, wait_ns,
       transfer_ns, idle_ns, flops, peak_memory_bytes, complete
FROM device_steps WHERE job_id = ?1 AND step >= ?2 AND step <= ?3 ORDER BY step, rank)sql";
constexpr const char* kInsertAlert = R"sql(
INSERT OR REPLACE INTO alerts(job_id, alert_id, state, rule, step, raised_unix_ns, alert)
VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7))sql";
// Rows in the order they happened: a clear follows its raise.
constexpr const char* kListAlerts = R"sql(
SELECT alert FROM alerts WHERE job_id = ?1 AND alert_id > ?2 AND (?3 = '' OR rule = ?3)
ORDER BY raised_unix_ns, alert_id, state)sql";

class SqliteLogIndex final : public LogIndex {
 public:
  explicit SqliteLogIndex(std::filesystem::path path) : path_(std::move(path)) {}

  absl::Status Init();

  absl::Status UpsertJob(const std::string& job_id, int64_t created_unix_ns,
                         uint32_t world_size) override;
  absl::Status UpsertStream(const std::string& job_id, const StreamProgress& progress) override;
  absl::Status UpsertSegment(const std::string& job_id, const std::string& segment_path,
                             uint64_t records, uint64_t bytes, bool sealed,
                             uint64_t events) override;
  absl::Status DeleteSegment(const std::string& segment_path) override;
  absl::Status InsertLoss(const std::string& job_id, const IndexedLoss& loss) override;
  absl::StatusOr<std::vector<IndexedLoss>> ListLosses(const std::string& job_id) override;
  absl::Status DeleteJob(const std::string& job_id) override;
  absl::Status UpsertDeviceSteps(const std::string& job_id,
                                 const std::vector<IndexedDeviceStep>& steps) override;
  absl::StatusOr<std::vector<IndexedDeviceStep>> ListDeviceSteps(const std::string& job_id,
                                                                 uint64_t first_step,
                                                                 uint64_t last_step) override;
  absl::Status InsertAlert(const trainscope::v1::Alert& alert) override;
  absl::StatusOr<std::vector<trainscope::v1::Alert>> ListAlerts(
      const std::string& job_id, const trainscope::v1::AlertQuery& query) override;
  absl::StatusOr<std::vector<IndexedJob>> ListJobs() override;
  absl::StatusOr<std::vector<IndexedStream>> ListStreams(const std::string& job_id) override;
  absl::StatusOr<std::vector<IndexedSegment>> ListSegments(const std::string& job_id) override;

 private:
  absl::Status Error(const std::string& what) const { return db_->Error(what); }
  absl::Status Exec(const char* sql, const std::string& what) { return db_->Exec(sql, what); }
  // Runs a statement that returns no rows, then resets it.
  absl::Status Run(SqliteStatement& statement, const std::string& what) {
    return db_->Run(statement, what);
  }

  const std::filesystem::path path_;
  // Declared before the statements: closed after they are finalized.
  std::unique_ptr<IndexConnection> db_;
  SqliteStatement upsert_job_;
  SqliteStatement ensure_job_;
  SqliteStatement upsert_stream_;
  SqliteStatement upsert_segment_;
  SqliteStatement list_jobs_;
  SqliteStatement list_streams_;
  SqliteStatement list_segments_;
  SqliteStatement upsert_device_step_;
  SqliteStatement list_device_steps_;
  SqliteStatement insert_alert_;
  SqliteStatement list_alerts_;
  SqliteStatement delete_segment_;
  SqliteStatement insert_loss_;
  SqliteStatement list_losses_;
};

absl::Status SqliteLogIndex::Init() {
  absl::StatusOr<std::unique_ptr<IndexConnection>> db = IndexConnection::Open(path_);
  if (!db.ok()) return db.status();
  db_ = std::move(*db);
  if (absl::Status migrated = MigrateIndexSchema(*db_); !migrated.ok()) return migrated;

  const std::pair<SqliteStatement*, const char*> statements[] = {
      {&upsert_job_, kUpsertJob},
      {&ensure_job_, kEnsureJob},
      {&upsert_stream_, kUpsertStream},
      {&upsert_segment_, kUpsertSegment},
      {&list_jobs_, kListJobs},
      {&list_streams_, kListStreams},
      {&list_segments_, kListSegments},
      {&upsert_device_step_, kUpsertDeviceStep},
      {&list_device_steps_, kListDeviceSteps},
      {&insert_alert_, kInsertAlert},
      {&list_alerts_, kListAlerts},
      {&delete_segment_, kDeleteSegment},
      {&insert_loss_, kInsertLoss},
      {&list_losses_, kListLosses},
  };
  for (const auto& [statement, sql] : statements) {
    if (absl::Status s = db_->Prepare(statement, sql, "cannot prepare a statement"); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteLogIndex::UpsertJob(const std::string& job_id, int64_t created_unix_ns,
                                       uint32_t world_size) {
  upsert_job_.Bind(1, job_id);
  upsert_job_.Bind(2, created_unix_ns);
  upsert_job_.Bind(3, static_cast<int64_t>(world_size));
  return Run(upsert_job_, absl::StrCat("cannot upsert job ", job_id));
}

absl::Status SqliteLogIndex::UpsertStream(const std::string& job_id,
                                          const StreamProgress& progress) {
  ensure_job_.Bind(1, job_id);
  if (absl::Status s = Run(ensure_job_, absl::StrCat("cannot insert job ", job_id)); !s.ok()) {
    return s;
  }
  const auto& hello = progress.hello;
  upsert_stream_.Bind(1, job_id);
  upsert_stream_.Bind(2, static_cast<int64_t>(hello.rank()));
  upsert_stream_.Bind(3, ToSql(hello.agent_instance_id()));
  upsert_stream_.Bind(4, static_cast<int64_t>(hello.restart_count()));
  upsert_stream_.Bind(5, hello.host());
  upsert_stream_.Bind(6, static_cast<int64_t>(hello.pid()));
  upsert_stream_.Bind(7, hello.device());
  upsert_stream_.Bind(8, hello.framework());
  upsert_stream_.Bind(9, ToSql(progress.last_sequence));
  upsert_stream_.Bind(10, ToSql(progress.batches));
  upsert_stream_.Bind(11, ToSql(progress.events));
  upsert_stream_.Bind(12, ToSql(progress.bytes));
  upsert_stream_.Bind(13, progress.goodbye ? 1 : 0);
  return Run(upsert_stream_,
             absl::StrCat("cannot upsert stream rank ", hello.rank(), " of job ", job_id));
}

absl::Status SqliteLogIndex::UpsertSegment(const std::string& job_id,
                                           const std::string& segment_path, uint64_t records,
                                           uint64_t bytes, bool sealed, uint64_t events) {
  ensure_job_.Bind(1, job_id);
  if (absl::Status s = Run(ensure_job_, absl::StrCat("cannot insert job ", job_id)); !s.ok()) {
    return s;
  }
  upsert_segment_.Bind(1, job_id);
  upsert_segment_.Bind(2, segment_path);
  upsert_segment_.Bind(3, ToSql(records));
  upsert_segment_.Bind(4, ToSql(bytes));
  upsert_segment_.Bind(5, sealed ? 1 : 0);
  upsert_segment_.Bind(6, ToSql(events));
  return Run(upsert_segment_, absl::StrCat("cannot upsert segment ", segment_path));
}

absl::Status SqliteLogIndex::DeleteSegment(const std::string& segment_path) {
  delete_segment_.Bind(1, segment_path);
  return Run(delete_segment_, absl::StrCat("cannot delete segment row ", segment_path));
}

absl::Status SqliteLogIndex::InsertLoss(const std::string& job_id, const IndexedLoss& loss) {
  ensure_job_.Bind(1, job_id);
  if (absl::Status s = Run(ensure_job_, absl::StrCat("cannot insert job ", job_id)); !s.ok()) {
    return s;
  }
  SqliteStatement& st = insert_loss_;
  st.Bind(1, job_id);
  st.Bind(2, loss.found_unix_ns);
  st.Bind(3, loss.segment);
  st.Bind(4, loss.rank);
  st.Bind(5, loss.problem);
  st.Bind(6, ToSql(loss.records));
  st.Bind(7, ToSql(loss.events));
  st.Bind(8, ToSql(loss.bytes));
  return Run(st, absl::StrCat("cannot record a loss of job ", job_id));
}

absl::StatusOr<std::vector<IndexedLoss>> SqliteLogIndex::ListLosses(const std::string& job_id) {
  std::vector<IndexedLoss> losses;
  SqliteStatement& st = list_losses_;
  st.Bind(1, job_id);
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    losses.push_back({.found_unix_ns = st.Int(0),
                      .segment = st.Text(1),
                      .rank = st.Int(2),
                      .problem = st.Text(3),
                      .records = FromSql(st.Int(4)),
                      .events = FromSql(st.Int(5)),
                      .bytes = FromSql(st.Int(6))});
  }
  absl::Status status =
      rc == SQLITE_DONE ? absl::OkStatus() : Error(absl::StrCat("cannot list losses of ", job_id));
  st.Reset();
  if (!status.ok()) return status;
  return losses;
}

absl::Status SqliteLogIndex::DeleteJob(const std::string& job_id) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE", "cannot begin a transaction"); !s.ok()) return s;
  for (const char* table : {"streams", "segments", "device_steps", "alerts", "losses", "jobs"}) {
    SqliteStatement st;
    const std::string sql = absl::StrCat("DELETE FROM ", table, " WHERE job_id = ?1");
    if (st.Prepare(db_->handle(), sql.c_str()) != SQLITE_OK) {
      absl::Status s = Error(absl::StrCat("cannot prepare the deletion from ", table));
      (void)Exec("ROLLBACK", "rollback");
      return s;
    }
    st.Bind(1, job_id);
    if (absl::Status s = Run(st, absl::StrCat("cannot delete job ", job_id, " from ", table));
        !s.ok()) {
      (void)Exec("ROLLBACK", "rollback");
      return s;
    }
  }
  return Exec("COMMIT", absl::StrCat("cannot commit the deletion of job ", job_id));
}

absl::Status SqliteLogIndex::UpsertDeviceSteps(const std::string& job_id,
                                               const std::vector<IndexedDeviceStep>& steps) {
  if (steps.empty()) return absl::OkStatus();
  ensure_job_.Bind(1, job_id);
  if (absl::Status s = Run(ensure_job_, absl::StrCat("cannot insert job ", job_id)); !s.ok()) {
    return s;
  }
  if (absl::Status s = Exec("BEGIN", "cannot begin a transaction"); !s.ok()) return s;
  for (const IndexedDeviceStep& d : steps) {
    SqliteStatement& st = upsert_device_step_;
    st.Bind(1, job_id);
    st.Bind(2, ToSql(d.step));
    st.Bind(3, static_cast<int64_t>(d.rank));
    st.Bind(4, static_cast<int64_t>(d.stage));
    st.Bind(5, d.start_ns);
    st.Bind(6, d.step_time_ns);
    st.Bind(7, d.data_wait_ns);
    st.Bind(8, d.compute_ns);
    st.Bind(9, d.wait_ns);
    st.Bind(10, d.transfer_ns);
    st.Bind(11, d.idle_ns);
    st.Bind(12, ToSql(d.flops));
    st.Bind(13, ToSql(d.peak_memory_bytes));
    st.Bind(14, d.complete ? 1 : 0);
    if (absl::Status s = Run(st, absl::StrCat("cannot upsert step ", d.step, " of rank ", d.rank,
                                              " of job ", job_id));
        !s.ok()) {
      (void)Exec("ROLLBACK", "rollback");
      return s;
    }
  }
  absl::Status committed = Exec("COMMIT", "cannot commit step rows");
  // A COMMIT that failed (disk full) leaves the transaction open.
  if (!committed.ok()) (void)Exec("ROLLBACK", "rollback");
  return committed;
}

absl::StatusOr<std::vector<IndexedDeviceStep>> SqliteLogIndex::ListDeviceSteps(
    const std::string& job_id, uint64_t first_step, uint64_t last_step) {
  std::vector<IndexedDeviceStep> steps;
  SqliteStatement& st = list_device_steps_;
  st.Bind(1, job_id);
  st.Bind(2, ToSql(first_step));
  st.Bind(3, ToSql(last_step));
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    steps.push_back({.step = FromSql(st.Int(0)),
                     .rank = static_cast<uint32_t>(st.Int(1)),
                     .stage = static_cast<uint32_t>(st.Int(2)),
                     .start_ns = st.Int(3),
                     .step_time_ns = st.Int(4),
                     .data_wait_ns = st.Int(5),
                     .compute_ns = st.Int(6),
                     .wait_ns = st.Int(7),
                     .transfer_ns = st.Int(8),
                     .idle_ns = st.Int(9),
                     .flops = FromSql(st.Int(10)),
                     .peak_memory_bytes = FromSql(st.Int(11)),
                     .complete = st.Int(12) != 0});
  }
  absl::Status status = rc == SQLITE_DONE ? absl::OkStatus() : Error("cannot list device steps");
  st.Reset();
  if (!status.ok()) return status;
  return steps;
}

absl::Status SqliteLogIndex::InsertAlert(const trainscope::v1::Alert& alert) {
  ensure_job_.Bind(1, alert.job_id());
  if (absl::Status s = Run(ensure_job_, absl::StrCat("cannot insert job ", alert.job_id()));
      !s.ok()) {
    return s;
  }
  SqliteStatement& st = insert_alert_;
  st.Bind(1, alert.job_id());
  st.Bind(2, ToSql(alert.alert_id()));
  st.Bind(3, static_cast<int64_t>(alert.state()));
  st.Bind(4, alert.rule());
  st.Bind(5, ToSql(alert.step()));
  st.Bind(6, alert.raised_unix_ns());
  st.BindBlob(7, alert.SerializeAsString());
  return Run(st,
             absl::StrCat("cannot insert alert ", alert.alert_id(), " of job ", alert.job_id()));
}

absl::StatusOr<std::vector<trainscope::v1::Alert>> SqliteLogIndex::ListAlerts(
    const std::string& job_id, const trainscope::v1::AlertQuery& query) {
  std::vector<trainscope::v1::Alert> rows;
  SqliteStatement& st = list_alerts_;
  st.Bind(1, job_id);
  st.Bind(2, ToSql(query.after_alert_id()));
  st.Bind(3, query.rule());
  int rc;
  absl::Status status;
  while ((rc = st.Step()) == SQLITE_ROW) {
    trainscope::v1::Alert alert;
    if (!alert.ParseFromString(st.Text(0))) {
      status = absl::DataLossError(
          absl::StrCat("index ", path_.string(), ": an alert row of job ", job_id,
                       " does not parse (the index is damaged; rebuild it from the logs)"));
      break;
    }
    rows.push_back(std::move(alert));
  }
  if (status.ok() && rc != SQLITE_DONE && rc != SQLITE_ROW) status = Error("cannot list alerts");
  st.Reset();
  if (!status.ok()) return status;
  return SelectAlerts(rows, query);
}

absl::StatusOr<std::vector<IndexedJob>> SqliteLogIndex::ListJobs() {
  std::vector<IndexedJob> jobs;
  int rc;
  while ((rc = list_jobs_.Step()) == SQLITE_ROW) {
    jobs.push_back({.job_id = list_jobs_.Text(0),
                    .created_unix_ns = list_jobs_.Int(1),
                    .world_size = static_cast<uint32_t>(list_jobs_.Int(2)),
                    .streams = FromSql(list_jobs_.Int(3)),
                    .events = FromSql(list_jobs_.Int(4))});
  }
  absl::Status status = rc == SQLITE_DONE ? absl::OkStatus() : Error("cannot list jobs");
  list_jobs_.Reset();
  if (!status.ok()) return status;
  return jobs;
}

absl::StatusOr<std::vector<IndexedStream>> SqliteLogIndex::ListStreams(const std::string& job_id) {
  std::vector<IndexedStream> streams;
  list_streams_.Bind(1, job_id);
  int rc;
  while ((rc = list_streams_.Step()) == SQLITE_ROW) {
    const SqliteStatement& row = list_streams_;
    streams.push_back({.rank = static_cast<uint32_t>(row.Int(0)),
                       .agent_instance_id = FromSql(row.Int(1)),
                       .restart_count = static_cast<uint32_t>(row.Int(2)),
                       .host = row.Text(3),
                       .pid = static_cast<uint32_t>(row.Int(4)),
                       .device = row.Text(5),
                       .framework = row.Text(6),
                       .last_sequence = FromSql(row.Int(7)),
                       .batches = FromSql(row.Int(8)),
                       .events = FromSql(row.Int(9)),
                       .bytes = FromSql(row.Int(10)),
                       .goodbye = row.Int(11) != 0});
  }
  absl::Status status =
      rc == SQLITE_DONE ? absl::OkStatus() : Error(absl::StrCat("cannot list streams of ", job_id));
  list_streams_.Reset();
  if (!status.ok()) return status;
  return streams;
}

absl::StatusOr<std::vector<IndexedSegment>> SqliteLogIndex::ListSegments(
    const std::string& job_id) {
  std::vector<IndexedSegment> segments;
  list_segments_.Bind(1, job_id);
  int rc;
  while ((rc = list_segments_.Step()) == SQLITE_ROW) {
    segments.push_back({.path = list_segments_.Text(0),
                        .records = FromSql(list_segments_.Int(1)),
                        .bytes = FromSql(list_segments_.Int(2)),
                        .sealed = list_segments_.Int(3) != 0,
                        .events = FromSql(list_segments_.Int(4))});
  }
  absl::Status status = rc == SQLITE_DONE ? absl::OkStatus()
                                          : Error(absl::StrCat("cannot list segments of ", job_id));
  list_segments_.Reset();
  if (!status.ok()) return status;
  return segments;
}

}  // namespace

absl::StatusOr<std::string> LogIndex::CheckOrSetAside(const std::filesystem::path& db_path) {
  return CheckIndexOrSetAside(db_path);
}

absl::StatusOr<std::unique_ptr<LogIndex>> LogIndex::Open(const std::filesystem::path& db_path) {
  if (db_path.empty()) {
    return absl::InvalidArgumentError("index path is empty: expected a SQLite file path");
  }
  auto index = std::make_unique<SqliteLogIndex>(db_path);
  if (absl::Status status = index->Init(); !status.ok()) return status;
  return index;
}

}  // namespace trainscope::collector
