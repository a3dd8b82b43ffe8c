// The collector's job key: one secret from which every job's membership
// secret is derived, so that the collector knows the right secret of a job
// id before any rank of it says Hello. A job id is then not first-come-
// first-served: a process that says Hello first with a token of its own, or
// claims a rank slot nobody has taken yet, is refused unless it holds the
// job's secret, which only the key's holder (the operator, a launcher that
// can read the key file) can mint.
//
// Usage:
//   ASSIGN_OR_RETURN(JobKey key, JobKey::ReadFile(path, "--job-key-file"));
//   std::string secret = key.JobSecret("resnet-17");   // what the ranks present
//   bool member = key.Proves("resnet-17", hello.job_token());
//
// The secret is HMAC-SHA256(key, "trainscope job secret v1\n" + job id) as 64
// lower-case hex digits: a secret leaked with one job opens no other. Make a
// key with `openssl rand -hex 32 > job.key` (or `trainscope job-secret
// --new-key FILE`); the file must not be readable by others (mode 0600 or
// 0640 for an operators' group).
//
// Threading: immutable after construction; safe to share across threads.
#ifndef TRAINSCOPE_SECURITY_JOB_KEY_H_
#define TRAINSCOPE_SECURITY_JOB_KEY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainscope::security {

class JobKey {
 public:
  // The key in `path` (its first line, surrounding spaces trimmed, at least
  // 32 characters). `label` names where the path came from and starts every
  // error. Refuses a file others may read, naming its mode.
  static absl::StatusOr<JobKey> ReadFile(const std::string& path, absl::string_view label);

  // Writes a fresh random key (64 hex digits) to `path` with mode 0600;
  // refuses to overwrite an existing file.
  static absl::Status WriteNewKeyFile(const std::string& path);

  // The key in `path`, made first (a fresh random key, mode 0600, in a
  // directory made with mode 0700 when missing) if the file does not exist:
  // the collector's default key. Two processes starting at once agree on one
  // key (the file appears whole or not at all). `*created` says whether this
  // call made it.
  static absl::StatusOr<JobKey> ReadOrCreateFile(const std::string& path, absl::string_view label,
                                                 bool* created);

  explicit JobKey(std::string key) : key_(std::move(key)) {}

  // The membership secret of `job_id`.
  std::string JobSecret(absl::string_view job_id) const;

  // Whether `presented` is the secret of `job_id`, compared in time that does
  // not depend on where it differs.
  bool Proves(absl::string_view job_id, absl::string_view presented) const;

 private:
  std::string key_;
};

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_JOB_KEY_H_
