#include "trainscope/collector/store/job_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "segment_format.h"
#include "trainscope/collector/store/data_dir_files.h"
#include "segment_scanner.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using trainscope::v1::LogRecord;

absl::Status ErrnoStatus(int error, const std::string& message) {
  return ErrnoToStatus(error, message);
}

// pwrite until done; EINTR and short writes are retried, not errors.
absl::Status WriteAll(int fd, std::string_view bytes, uint64_t offset, const fs::path& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return ErrnoStatus(
          errno, absl::StrCat("cannot write ", bytes.size() - done, " bytes to log segment ",
                              path.string(), " at offset ", offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status DataSync(int fd, const fs::path& path) {
  int rc;
  do {
    rc = ::fdatasync(fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0)
    return ErrnoStatus(errno, absl::StrCat("cannot fdatasync log segment ", path.string()));
  return absl::OkStatus();
}

// Makes a new directory entry durable (a synced file is not enough).
absl::Status SyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open log directory ", dir.string()));
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus(error, absl::StrCat("cannot fsync log directory ", dir.string()));
  return absl::OkStatus();
}

StreamProgress& StreamFor(uint32_t rank, uint64_t agent_instance_id, JobLogState* state) {
  auto [it, inserted] = state->streams.try_emplace(StreamKey{rank, agent_instance_id});
  if (inserted) {
    // Keep the key readable from the progress alone (LogIndex::UpsertStream).
    it->second.hello.set_rank(rank);
    it->second.hello.set_agent_instance_id(agent_instance_id);
  }
  return it->second;
}

// `batch_bytes`: the batch's serialized size when the caller knows it.
void Fold(const LogRecord& record, std::optional<uint64_t> batch_bytes, JobLogState* state) {
  switch (record.body_case()) {
    case LogRecord::kStreamOpened: {
      const auto& hello = record.stream_opened().hello();
      StreamProgress& progress = StreamFor(hello.rank(), hello.agent_instance_id(), state);
      progress.hello = hello;
      progress.hello.clear_job_token();
      progress.goodbye = false;
      progress.exit_error.clear();
      progress.closed = false;
      break;
    }
    case LogRecord::kBatch: {
      const auto& stream_batch = record.batch();
      const auto& batch = stream_batch.batch();
      StreamProgress& progress =
          StreamFor(stream_batch.rank(), stream_batch.agent_instance_id(), state);
      // A refused batch still consumes its sequence (the agent will not resend it).
      progress.last_sequence = std::max(progress.last_sequence, batch.sequence());
      if (batch.has_drops()) progress.drops = batch.drops();
      if (!stream_batch.refused_reason().empty()) {
        ++progress.batches_refused;
        break;
      }
      ++progress.batches;
      progress.events += static_cast<uint64_t>(batch.kind_size());
      progress.bytes += batch_bytes ? *batch_bytes : batch.ByteSizeLong();
      break;
    }
    case LogRecord::kStreamClosed: {
      const auto& closed = record.stream_closed();
      StreamProgress& progress = StreamFor(closed.rank(), closed.agent_instance_id(), state);
      if (closed.goodbye()) progress.goodbye = true;
      progress.exit_error = closed.error();
      // Logs written before collector_stopping existed say so in the reason only.
      progress.closed =
          !closed.collector_stopping() && closed.reason() != "collector shutting down";
      break;
    }
    case LogRecord::kCommand:
      state->commands.push_back(record.command());
      break;
    case LogRecord::kProbe:
    case LogRecord::BODY_NOT_SET:
      break;
  }
}

// The stream a record changes in JobLogState, if any.
std::optional<StreamKey> StreamOf(const LogRecord& record) {
  switch (record.body_case()) {
    case LogRecord::kStreamOpened:
      return StreamKey{record.stream_opened().hello().rank(),
                       record.stream_opened().hello().agent_instance_id()};
    case LogRecord::kBatch:
      return StreamKey{record.batch().rank(), record.batch().agent_instance_id()};
    case LogRecord::kStreamClosed:
      return StreamKey{record.stream_closed().rank(), record.stream_closed().agent_instance_id()};
    default:
      return std::nullopt;
  }
}

// Events a record adds to the log (accepted batches only).
uint64_t EventsOf(const LogRecord& record) {
  if (!record.has_batch() || !record.batch().refused_reason().empty()) return 0;
  return static_cast<uint64_t>(record.batch().batch().kind_size());
}

// Errors after which the log can take appends again: space can come back.
// Any other write or sync error leaves the file in an unknown state.
bool Retryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted;
}

class SegmentedJobLog final : public JobLog {
 public:
  SegmentedJobLog(const Options& options, int lock_fd) : options_(options), lock_fd_(lock_fd) {}
  ~SegmentedJobLog() override {
    if (fd_ >= 0) ::close(fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
  }

  absl::Status Recover(RecoveryReport* report);

  absl::Status Append(const LogRecord& record) override;
  absl::Status Sync() override;
  const JobLogState& state() const override { return state_; }
  uint64_t bytes_written() const override { return sealed_bytes_ + segment_size_; }
  std::vector<SegmentInfo> segments() const override { return segments_; }

 private:
  // What the last successful Sync (or rotation) left durable in the current
  // segment, and how to undo the state changes made since.
  struct DurablePoint {
    uint64_t segment_size = 0;
    uint64_t records = 0;
    uint64_t events = 0;
    size_t commands = 0;
    // Streams changed since: their progress before (nullopt: the stream is new).
    std::map<StreamKey, std::optional<StreamProgress>> streams_before;
  };

  absl::StatusOr<int> CreateSegmentFile(const fs::path& path);
  absl::Status CreateSegment(uint64_t index);
  absl::Status Rotate();
  absl::Status WritePending();
  void MarkDurable();
  // Drops everything since the durable point from disk and from state();
  // `cause` is returned with what happened. Sticky when the file cannot be cut back.
  absl::Status RollBack(const absl::Status& cause);
  absl::Status Fail(absl::Status status) {
    failed_ = absl::Status(status.code(),
                           absl::StrCat(status.message(), "; job log ", options_.dir.string(),
                                        " refuses further appends until reopened"));
    return failed_;
  }
  const fs::path& current_path() const { return segments_.back().path; }

  const Options options_;
  const int lock_fd_;
  int fd_ = -1;  // the current (last) segment, written with pwrite
  uint64_t segment_index_ = 0;
  uint64_t segment_size_ = 0;  // current segment's bytes on disk
  uint64_t sealed_bytes_ = 0;  // all earlier segments' bytes on disk
  bool unsynced_ = false;      // written since the last fdatasync
  std::string pending_;        // frames appended, not yet written
  std::string scratch_;        // one record's serialization, reused
  std::vector<SegmentInfo> segments_;
  JobLogState state_;
  DurablePoint durable_;
  // Set when an Append had to roll back: the next Sync fails with it, so
  // nothing appended since the previous Sync is acknowledged.
  absl::Status rolled_back_;
  absl::Status failed_;  // sticky: see the failure contract in job_log.h
};

absl::Status SegmentedJobLog::Recover(RecoveryReport* report) {
  absl::StatusOr<std::vector<std::pair<uint64_t, fs::path>>> files = ListSegmentFiles(options_.dir);
  if (!files.ok()) return files.status();
  if (files->empty()) return CreateSegment(0);

  bool header_valid = true;
  uint64_t expected_index = 0;  // the chain starts at 0 and has no gaps
  for (size_t i = 0; i < files->size(); ++i) {
    const fs::path& path = (*files)[i].second;
    const bool last = i + 1 == files->size();
    for (; expected_index < (*files)[i].first; ++expected_index) {
      const std::string name = SegmentFileName(expected_index);
      report->messages.push_back(absl::StrCat("segment ", name, " is missing from the chain (",
                                              path.filename().string(),
                                              " follows): its records are lost"));
      report->missing_segments.push_back(name);
      ++report->lost.segments_missing;
    }
    expected_index = (*files)[i].first + 1;
    uint64_t events = 0;
    absl::StatusOr<SegmentScan> scan =
        ScanSegmentFile(path, [this, &events](const LogRecord& record) {
          Fold(record, std::nullopt, &state_);
          events += EventsOf(record);
          return true;
        });
    if (!scan.ok()) return scan.status();
    ++report->segments;
    report->records += scan->records;
    for (DamagedRange& range : scan->damage) {
      report->messages.push_back(absl::StrCat("skipped ", range.length, " corrupt bytes at offset ",
                                              range.offset, " of ", path.string(), " (",
                                              range.problem, "); left in place"));
      report->damage.push_back(std::move(range));
      ++report->corrupt_records;
    }
    SegmentInfo info{
        .path = path, .records = scan->records, .bytes = scan->file_bytes, .events = events};
    if (!last) {
      if (scan->file_bytes == 0) {
        // Rotation only seals a segment that holds records.
        report->messages.push_back(absl::StrCat("sealed segment ", path.string(),
                                                " is empty (0 bytes): its records are lost"));
      }
      if (scan->tail_bytes > 0) {
        // Only the last segment is ever appended to, so this is damage, not a torn write.
        report->messages.push_back(
            absl::StrCat("skipped ", scan->tail_bytes, " corrupt bytes at offset ", scan->valid_end,
                         " of ", path.string(), " (", scan->tail_problem,
                         ", at the end of a sealed segment); left in place"));
        report->damage.push_back({.segment = path,
                                  .offset = scan->valid_end,
                                  .length = scan->tail_bytes,
                                  .problem = scan->tail_problem});
        ++report->corrupt_records;
      }
      info.sealed = true;
      sealed_bytes_ += info.bytes;
      segments_.push_back(std::move(info));
      continue;
    }

    // The last segment: cut a torn tail and continue appending to it.
    header_valid = scan->header_valid;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) return ErrnoStatus(errno, absl::StrCat("cannot open log segment ", path.string()));
    segment_index_ = (*files)[i].first;
    bool changed = false;
    if (scan->tail_bytes > 0) {
      if (::ftruncate(fd_, static_cast<off_t>(scan->valid_end)) != 0) {
        return ErrnoStatus(errno, absl::StrCat("cannot cut the torn tail of log segment ",
                                               path.string(), " at offset ", scan->valid_end));
      }
      report->torn_bytes_cut += scan->tail_bytes;
      report->messages.push_back(absl::StrCat("cut ", scan->tail_bytes, " torn bytes at offset ",
                                              scan->valid_end, " of ", path.string(), " (",
                                              scan->tail_problem, ")"));
      changed = true;
    }
    segment_size_ = scan->valid_end;
    if (segment_size_ == 0) {
      // Nothing valid, not even the header (a crash right after creating it).
      const std::string header = EncodeSegmentHeader();
      if (absl::Status written = WriteAll(fd_, header, 0, path); !written.ok()) return written;
      segment_size_ = header.size();
      header_valid = true;
      changed = true;
    }
    if (changed && options_.fsync) {
      if (absl::Status synced = DataSync(fd_, path); !synced.ok()) return synced;
    }
    info.bytes = segment_size_;
    segments_.push_back(std::move(info));
  }
  MarkDurable();
  // Records after a damaged header are readable, but appends go to a clean segment.
  if (!header_valid) return Rotate();
  return absl::OkStatus();
}

absl::StatusOr<int> SegmentedJobLog::CreateSegmentFile(const fs::path& path) {
  absl::StatusOr<int> created = OpenDataFile(path, O_WRONLY | O_CREAT | O_EXCL);
  if (!created.ok()) {
    return absl::Status(created.status().code(),
                        absl::StrCat("cannot create log segment: ", created.status().message()));
  }
  const int fd = *created;
  absl::Status status = WriteAll(fd, EncodeSegmentHeader(), 0, path);
  if (status.ok() && options_.fsync) status = DataSync(fd, path);
  if (status.ok() && options_.fsync) status = SyncDirectory(options_.dir);
  if (!status.ok()) {
    ::close(fd);
    // A header-less file would read as damage; try again at the next rotation.
    (void)::unlink(path.c_str());
    return status;
  }
  return fd;
}

absl::Status SegmentedJobLog::CreateSegment(uint64_t index) {
  const fs::path path = options_.dir / SegmentFileName(index);
  absl::StatusOr<int> fd = CreateSegmentFile(path);
  if (!fd.ok()) return fd.status();
  fd_ = *fd;
  segment_index_ = index;
  segment_size_ = kSegmentHeaderBytes;
  unsynced_ = false;
  segments_.push_back({.path = path, .records = 0, .bytes = segment_size_, .sealed = false});
  MarkDurable();
  return absl::OkStatus();
}

absl::Status SegmentedJobLog::Rotate() {
  if (absl::Status written = WritePending(); !written.ok()) return written;
  if (options_.fsync && unsynced_) {
    if (absl::Status synced = DataSync(fd_, current_path()); !synced.ok()) return synced;
  }
  unsynced_ = false;
  MarkDurable();  // everything appended so far is on disk now
  // The new segment first: when it cannot be created the current one stays
  // open and takes the appends (a rotation is tried again at the next one).
  const fs::path path = options_.dir / SegmentFileName(segment_index_ + 1);
  absl::StatusOr<int> fd = CreateSegmentFile(path);
  if (!fd.ok()) return fd.status();
  ::close(fd_);
  fd_ = *fd;
  ++segment_index_;
  segments_.back().sealed = true;
  sealed_bytes_ += segment_size_;
  segment_size_ = kSegmentHeaderBytes;
  segments_.push_back({.path = path, .records = 0, .bytes = segment_size_, .sealed = false});
  MarkDurable();
  return absl::OkStatus();
}

absl::Status SegmentedJobLog::WritePending() {
  if (pending_.empty()) return absl::OkStatus();
  absl::Status written = WriteAll(fd_, pending_, segment_size_, current_path());
  if (!written.ok()) {
    // Best effort: drop a partial frame now rather than leave it to recovery.
    (void)::ftruncate(fd_, static_cast<off_t>(segment_size_));
    return written;
  }
  segment_size_ += pending_.size();
  segments_.back().bytes = segment_size_;
  pending_.clear();
  unsynced_ = true;
  return absl::OkStatus();
}

void SegmentedJobLog::MarkDurable() {
  durable_.segment_size = segment_size_;
  durable_.records = segments_.back().records;
  durable_.events = segments_.back().events;
  durable_.commands = state_.commands.size();
  durable_.streams_before.clear();
}

absl::Status SegmentedJobLog::RollBack(const absl::Status& cause) {
  pending_.clear();
  // Unsynced frames may or may not be on disk: cut the file back to what the
  // last Sync made durable, so disk and state() agree again.
  if (::ftruncate(fd_, static_cast<off_t>(durable_.segment_size)) != 0) {
    return Fail(absl::Status(
        cause.code(), absl::StrCat(cause.message(), "; and cannot cut ", current_path().string(),
                                   " back to ", durable_.segment_size,
                                   " bytes: ", std::strerror(errno))));
  }
  segment_size_ = durable_.segment_size;
  unsynced_ = false;
  SegmentInfo& current = segments_.back();
  const uint64_t records_dropped = current.records - durable_.records;
  current.bytes = segment_size_;
  current.records = durable_.records;
  current.events = durable_.events;
  state_.commands.resize(durable_.commands);
  for (auto& [key, before] : durable_.streams_before) {
    if (before.has_value()) {
      state_.streams[key] = std::move(*before);
    } else {
      state_.streams.erase(key);
    }
  }
  durable_.streams_before.clear();
  return absl::Status(
      cause.code(),
      absl::StrCat(cause.message(), "; the ", records_dropped,
                   " records appended since the last sync are dropped, not durable; job log ",
                   options_.dir.string(), " takes appends again"));
}

absl::Status SegmentedJobLog::Append(const LogRecord& record) {
  if (!failed_.ok()) return failed_;
  if (record.body_case() == LogRecord::BODY_NOT_SET) {
    return absl::InvalidArgumentError(
        "LogRecord has no body: expected one of stream_opened, batch, stream_closed, command, "
        "probe");
  }
  scratch_.clear();
  if (!record.SerializeToString(&scratch_)) {
    return absl::InvalidArgumentError("LogRecord cannot be serialized (over 2 GiB?)");
  }
  if (scratch_.size() > kMaxRecordBytes) {
    return absl::InvalidArgumentError(absl::StrCat("LogRecord of ", scratch_.size(),
                                                   " bytes is over the maximum record size of ",
                                                   kMaxRecordBytes, " bytes"));
  }
  // Rotate at a record boundary once the current segment is full, but never
  // leave a segment without records.
  if (segment_size_ + pending_.size() >= options_.segment_bytes && segments_.back().records > 0) {
    if (absl::Status rotated = Rotate(); !rotated.ok()) {
      if (!Retryable(rotated)) return Fail(rotated);
      if (!pending_.empty() || segment_size_ != durable_.segment_size) {
        // The earlier appends could not be written: they are gone, and the
        // next Sync must say so.
        absl::Status status = RollBack(rotated);
        if (!failed_.ok()) return failed_;
        rolled_back_ = status;
        return status;
      }
      // Only the new segment could not be created: what came before is
      // durable in the current one; this record is refused.
      return absl::Status(rotated.code(),
                          absl::StrCat(rotated.message(), "; this record is refused, job log ",
                                       options_.dir.string(), " takes appends again"));
    }
  }
  AppendFrame(scratch_, &pending_);
  ++segments_.back().records;
  segments_.back().events += EventsOf(record);
  if (std::optional<StreamKey> key = StreamOf(record)) {
    if (!durable_.streams_before.contains(*key)) {
      auto it = state_.streams.find(*key);
      durable_.streams_before.emplace(
          *key, it == state_.streams.end() ? std::nullopt
                                           : std::optional<StreamProgress>(it->second));
    }
  }
  // SerializeToString just cached every submessage's size: no second pass over the batch.
  std::optional<uint64_t> batch_bytes;
  if (record.has_batch()) batch_bytes = record.batch().batch().GetCachedSize();
  Fold(record, batch_bytes, &state_);
  return absl::OkStatus();
}

absl::Status SegmentedJobLog::Sync() {
  if (!failed_.ok()) return failed_;
  if (!rolled_back_.ok()) {
    // Appends after the rollback share the fate of the round they are in.
    absl::Status status = rolled_back_;
    rolled_back_ = absl::OkStatus();
    (void)RollBack(status);
    if (!failed_.ok()) return failed_;
    return status;
  }
  absl::Status status = WritePending();
  if (status.ok() && options_.fsync && unsynced_) status = DataSync(fd_, current_path());
  if (!status.ok()) {
    if (!Retryable(status)) return Fail(status);
    return RollBack(status);
  }
  if (options_.fsync) unsynced_ = false;
  MarkDurable();
  return absl::OkStatus();
}

// Holds dir/LOCK for the log's lifetime so two collectors never append to one job.
absl::StatusOr<int> LockDirectory(const fs::path& dir) {
  const fs::path path = dir / "LOCK";
  absl::StatusOr<int> opened = OpenDataFile(path, O_RDWR | O_CREAT);
  if (!opened.ok()) {
    return absl::Status(opened.status().code(),
                        absl::StrCat("cannot open lock file: ", opened.status().message()));
  }
  const int fd = *opened;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job log ", dir.string(), " is already open (", path.string(), " is locked)"));
    }
    return ErrnoStatus(error, absl::StrCat("cannot lock ", path.string()));
  }
  return fd;
}

}  // namespace

void FoldLogRecord(const LogRecord& record, JobLogState* state) {
  Fold(record, std::nullopt, state);
}

absl::StatusOr<std::unique_ptr<JobLog>> JobLog::Open(const Options& options,
                                                     RecoveryReport* report) {
  if (options.dir.empty()) {
    return absl::InvalidArgumentError("JobLog::Options.dir is empty: expected a directory path");
  }
  std::error_code error;
  if (fs::exists(options.dir, error) && !fs::is_directory(options.dir, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat("log directory ", options.dir.string(), " exists and is not a directory"));
  }
  if (absl::Status created = CreateDataDirectories(options.dir); !created.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create log directory ", options.dir.string(), ": ",
                     created.message()));
  }
  absl::StatusOr<int> lock_fd = LockDirectory(options.dir);
  if (!lock_fd.ok()) return lock_fd.status();
  auto log = std::make_unique<SegmentedJobLog>(options, *lock_fd);
  RecoveryReport local_report;
  if (absl::Status recovered = log->Recover(&local_report); !recovered.ok()) return recovered;
  if (report != nullptr) *report = std::move(local_report);
  return log;
}

}  // namespace trainscope::collector
