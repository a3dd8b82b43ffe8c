#include "trainscope/security/job_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trainscope::security {
namespace {

constexpr size_t kMinKeyChars = 32;
constexpr size_t kMaxKeyFileBytes = 64 << 10;
// Versioned so that a later derivation cannot collide with this one.
constexpr absl::string_view kSecretContext = "trainscope job secret v1\n";

}  // namespace

absl::StatusOr<JobKey> JobKey::ReadFile(const std::string& path, absl::string_view label) {
  const char* expected =
      "a job key file: one line of at least 32 characters (openssl rand -hex 32), not "
      "readable by others";
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": empty path; expected ", expected));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": cannot read '", path, "': ", std::strerror(errno), "; expected ", expected));
  }
  if ((st.st_mode & S_IROTH) != 0) {
    // A key others can read lets any local user mint every job's secret.
    return absl::PermissionDeniedError(
        absl::StrFormat("%s: '%s' is readable by every user (mode %04o); the job key must be "
                        "private: chmod 600 (or 640 for an operators' group) '%s'",
                        label, path, st.st_mode & 07777, path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": cannot read '", path, "': ", std::strerror(errno), "; expected ", expected));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string text = contents.str();
  if (text.size() > kMaxKeyFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": '", path, "' holds ", text.size(), " bytes; expected ", expected));
  }
  std::string key(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
  if (key.size() < kMinKeyChars) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": '", path, "' holds a key of ",
                                                   key.size(), " characters; expected ", expected));
  }
  return JobKey(std::move(key));
}

namespace {

// Makes `dir` and its missing parents, the last ones with mode 0700.
absl::Status MakePrivateDirs(const std::string& dir, absl::string_view label) {
  if (dir.empty() || access(dir.c_str(), F_OK) == 0) return absl::OkStatus();
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    if (absl::Status s = MakePrivateDirs(dir.substr(0, slash), label); !s.ok()) return s;
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat(label, ": cannot create the directory '", dir, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobKey> JobKey::ReadOrCreateFile(const std::string& path, absl::string_view label,
                                                bool* created) {
  *created = false;
  if (access(path.c_str(), F_OK) != 0) {
    const size_t slash = path.find_last_of('/');
    if (slash != std::string::npos) {
      if (absl::Status s = MakePrivateDirs(path.substr(0, slash), label); !s.ok()) return s;
    }
    // Written beside it, then linked into place: link() fails if another
    // process made the key meanwhile, and nobody reads a half-written key.
    const std::string temp = absl::StrCat(path, ".new.", getpid());
    unlink(temp.c_str());
    if (absl::Status s = WriteNewKeyFile(temp); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(label, ": ", s.message()));
    }
    const bool linked = link(temp.c_str(), path.c_str()) == 0;
    const int error = errno;
    unlink(temp.c_str());
    if (!linked && error != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat(label, ": cannot create the job key '", path, "': ", std::strerror(error)));
    }
    *created = linked;
  }
  return ReadFile(path, label);
}

absl::Status JobKey::WriteNewKeyFile(const std::string& path) {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    return absl::InternalError("cannot draw random bytes for a job key (OpenSSL RAND_bytes)");
  }
  const std::string hex = absl::StrCat(
      absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(raw), sizeof(raw))), "\n");
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the job key file '", path, "': ", std::strerror(errno),
                     errno == EEXIST ? " (an existing key is never overwritten)" : ""));
  }
  const ssize_t written = write(fd, hex.data(), hex.size());
  const bool ok = written == static_cast<ssize_t>(hex.size()) && fsync(fd) == 0;
  const int error = errno;
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return absl::InternalError(
        absl::StrCat("cannot write the job key file '", path, "': ", std::strerror(error)));
  }
  return absl::OkStatus();
}

std::string JobKey::JobSecret(absl::string_view job_id) const {
  const std::string message = absl::StrCat(kSecretContext, job_id);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(digest), length));
}

bool JobKey::Proves(absl::string_view job_id, absl::string_view presented) const {
  const std::string secret = JobSecret(job_id);
  if (presented.size() != secret.size()) return false;
  return CRYPTO_memcmp(secret.data(), presented.data(), secret.size()) == 0;
}

}  // namespace trainscope::security
