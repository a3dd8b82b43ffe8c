#include "trainscope/collector/store/stored_jobs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainscope/collector/store/data_dir_files.h"
#include "trainscope/collector/store/log_index.h"
#include "trainscope/proto/job_id.h"

namespace trainscope::collector {
namespace {

namespace fs = std::filesystem;

absl::Time ModificationTime(const struct stat& info) {
  return absl::FromUnixSeconds(info.st_mtim.tv_sec) + absl::Nanoseconds(info.st_mtim.tv_nsec);
}

// Sums the job's files and finds the newest write.
StoredJob Measure(std::string job_id, const fs::path& dir) {
  StoredJob job{.job_id = std::move(job_id), .dir = dir};
  std::error_code ec;
  struct stat info;
  if (::stat(dir.c_str(), &info) == 0) job.last_write = ModificationTime(info);
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (::lstat(it->path().c_str(), &info) != 0) continue;
    if (S_ISREG(info.st_mode)) job.bytes += static_cast<uint64_t>(info.st_size);
    job.last_write = std::max(job.last_write, ModificationTime(info));
  }
  return job;
}

std::string Gib(uint64_t bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
}

}  // namespace

absl::StatusOr<std::vector<StoredJob>> ListStoredJobs(const fs::path& data_dir) {
  const fs::path jobs_dir = data_dir / "jobs";
  std::error_code ec;
  std::vector<StoredJob> jobs;
  if (!fs::exists(jobs_dir, ec)) return jobs;
  for (fs::directory_iterator it(jobs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_directory(ec) || !protocol::IsValidJobId(name)) continue;
    jobs.push_back(Measure(name, it->path()));
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot list ", jobs_dir.string(), ": ", ec.message()));
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const StoredJob& a, const StoredJob& b) { return a.job_id < b.job_id; });
  return jobs;
}

absl::StatusOr<StoredJob> StatStoredJob(const fs::path& data_dir, const std::string& job_id) {
  if (absl::Status valid = protocol::ValidateJobId(job_id, "job"); !valid.ok()) return valid;
  const fs::path dir = data_dir / "jobs" / job_id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("no job '", job_id, "' in ", (data_dir / "jobs").string()));
  }
  return Measure(job_id, dir);
}

std::vector<StoredJob> SelectForRetention(const std::vector<StoredJob>& jobs,
                                          const RetentionPolicy& policy, absl::Time now,
                                          const std::function<bool(const std::string&)>& is_live) {
  std::vector<const StoredJob*> oldest_first;
  uint64_t total = 0;
  for (const StoredJob& job : jobs) {
    oldest_first.push_back(&job);
    total += job.bytes;
  }
  std::stable_sort(oldest_first.begin(), oldest_first.end(),
                   [](const StoredJob* a, const StoredJob* b) {
                     return a->last_write < b->last_write;
                   });
  std::vector<StoredJob> picked;
  for (const StoredJob* job : oldest_first) {
    const bool too_old =
        policy.max_age > absl::ZeroDuration() && now - job->last_write > policy.max_age;
    const bool over_size = policy.max_bytes > 0 && total > policy.max_bytes;
    if (!too_old && !over_size) continue;
    if (is_live && is_live(job->job_id)) continue;
    picked.push_back(*job);
    total -= job->bytes;
  }
  return picked;
}

std::string RetentionReason(const StoredJob& job, const RetentionPolicy& policy, absl::Time now) {
  if (policy.max_age > absl::ZeroDuration() && now - job.last_write > policy.max_age) {
    return absl::StrCat("last written ", absl::ToInt64Hours(now - job.last_write) / 24,
                        " days ago (over --retain-days=",
                        absl::ToInt64Hours(policy.max_age) / 24, ")");
  }
  return absl::StrCat("the oldest job while the data directory is over --retain-gb=",
                      absl::StrFormat("%g", static_cast<double>(policy.max_bytes) / (1ull << 30)),
                      " (", Gib(job.bytes), " freed)");
}

absl::Status DeleteStoredJob(const fs::path& data_dir, const std::string& job_id) {
  if (absl::Status valid = protocol::ValidateJobId(job_id, "job"); !valid.ok()) return valid;
  const fs::path dir = data_dir / "jobs" / job_id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("no job '", job_id, "' in ", (data_dir / "jobs").string()));
  }
  // The collector's lock: held while a collector has the job open.
  const fs::path lock_path = dir / "LOCK";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (lock_fd >= 0 && ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(lock_fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job '", job_id, "' is open by a running trainscope-collector (", lock_path.string(),
          " is locked): a live job is never deleted; stop that collector first, or let its "
          "retention (--retain-days, --retain-gb) remove the job once it has ended"));
    }
    return ErrnoToStatus(error, absl::StrCat("cannot lock ", lock_path.string()));
  }
  // Out of jobs/ first, under the lock: a crash from here on leaves no half-job.
  const fs::path deleting = data_dir / ".deleting";
  absl::Status status = CreateDataDirectories(deleting);
  const fs::path moved =
      deleting / absl::StrCat(job_id, "-", absl::ToUnixNanos(absl::Now()));
  if (status.ok()) {
    fs::rename(dir, moved, ec);
    if (ec) {
      status = absl::FailedPreconditionError(absl::StrCat(
          "cannot move ", dir.string(), " to ", moved.string(), ": ", ec.message()));
    }
  }
  if (lock_fd >= 0) ::close(lock_fd);
  if (!status.ok()) return status;

  const fs::path index_path = data_dir / "index.sqlite";
  if (fs::exists(index_path, ec)) {
    absl::StatusOr<std::unique_ptr<LogIndex>> index = LogIndex::Open(index_path);
    if (!index.ok()) return index.status();
    if (absl::Status s = (*index)->DeleteJob(job_id); !s.ok()) return s;
  }
  fs::remove_all(deleting, ec);  // this job and leftovers of interrupted removals
  if (ec) {
    return absl::InternalError(absl::StrCat("job '", job_id, "' is no longer listed, but ",
                                            deleting.string(),
                                            " could not be removed: ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace trainscope::collector
