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
#include "segment_scanner.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;
using trainscope::v1::LogRecord;

absl::Status ErrnoStatus(int error, std::string message) {
  absl::StrAppend(&message, ": ", std::strerror(error));
  switch (error) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
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
  absl::Status CreateSegment(uint64_t index);
  absl::Status Rotate();
  absl::Status WritePending();
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
  absl::Status failed_;  // sticky: see the failure contract in job_log.h
};

absl::Status SegmentedJobLog::Recover(RecoveryReport* report) {
  absl::StatusOr<std::vector<std::pair<uint64_t, fs::path>>> files = ListSegmentFiles(options_.dir);
  if (!files.ok()) return files.status();
  if (files->empty()) return CreateSegment(0);

  bool header_valid = true;
  for (size_t i = 0; i < files->size(); ++i) {
    const fs::path& path = (*files)[i].second;
    const bool last = i + 1 == files->size();
    absl::StatusOr<SegmentScan> scan = ScanSegmentFile(path, [this](const LogRecord& record) {
      Fold(record, std::nullopt, &state_);
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
    SegmentInfo info{.path = path, .records = scan->records, .bytes = scan->file_bytes};
    if (!last) {
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
  // Records after a damaged header are readable, but appends go to a clean segment.
  if (!header_valid) return Rotate();
  return absl::OkStatus();
}

absl::Status SegmentedJobLog::CreateSegment(uint64_t index) {
  const fs::path path = options_.dir / SegmentFileName(index);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot create log segment ", path.string()));
  const std::string header = EncodeSegmentHeader();
  absl::Status status = WriteAll(fd, header, 0, path);
  if (status.ok() && options_.fsync) status = DataSync(fd, path);
  if (status.ok() && options_.fsync) status = SyncDirectory(options_.dir);
  if (!status.ok()) {
    ::close(fd);
    return status;
  }
  fd_ = fd;
  segment_index_ = index;
  segment_size_ = header.size();
  unsynced_ = false;
  segments_.push_back({.path = path, .records = 0, .bytes = segment_size_, .sealed = false});
  return absl::OkStatus();
}

absl::Status SegmentedJobLog::Rotate() {
  if (absl::Status written = WritePending(); !written.ok()) return written;
  if (options_.fsync && unsynced_) {
    if (absl::Status synced = DataSync(fd_, current_path()); !synced.ok()) return synced;
  }
  ::close(fd_);
  fd_ = -1;
  segments_.back().sealed = true;
  sealed_bytes_ += segment_size_;
  segment_size_ = 0;
  return CreateSegment(segment_index_ + 1);
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
    if (absl::Status rotated = Rotate(); !rotated.ok()) return Fail(rotated);
  }
  AppendFrame(scratch_, &pending_);
  ++segments_.back().records;
  // SerializeToString just cached every submessage's size: no second pass over the batch.
  std::optional<uint64_t> batch_bytes;
  if (record.has_batch()) batch_bytes = record.batch().batch().GetCachedSize();
  Fold(record, batch_bytes, &state_);
  return absl::OkStatus();
}

absl::Status SegmentedJobLog::Sync() {
  if (!failed_.ok()) return failed_;
  if (absl::Status written = WritePending(); !written.ok()) return Fail(written);
  if (options_.fsync && unsynced_) {
    if (absl::Status synced = DataSync(fd_, current_path()); !synced.ok()) return Fail(synced);
  }
  if (options_.fsync) unsynced_ = false;
  return absl::OkStatus();
}

// Holds dir/LOCK for the log's lifetime so two collectors never append to one job.
absl::StatusOr<int> LockDirectory(const fs::path& dir) {
  const fs::path path = dir / "LOCK";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open lock file ", path.string()));
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
  fs::create_directories(options.dir, error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create log directory ", options.dir.string(), ": ", error.message()));
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
