#include "trainscope/collector/pipeline/job_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace trainscope::collector {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::filesystem::path& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path.string(), ": ", std::strerror(errno)));
}

absl::Status WriteFileDurably(const std::filesystem::path& path, absl::string_view content) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  ::fchmod(fd, 0600);  // an older file may have had looser bits
  const bool ok =
      ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()) &&
      ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  errno = saved_errno;
  if (!ok) return ErrnoError("cannot write", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError("cannot rename to", path);
  return absl::OkStatus();
}

}  // namespace

std::string GenerateJobToken() {
  std::random_device random;  // /dev/urandom on Linux
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    const uint32_t word = random();
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(word >> shift) & 0xf]);
  }
  return out;
}

absl::Status WriteJobToken(const std::filesystem::path& job_dir, const JobToken& token) {
  std::error_code ec;
  std::filesystem::create_directories(job_dir, ec);
  if (ec)
    return absl::UnavailableError(
        absl::StrCat("cannot create ", job_dir.string(), ": ", ec.message()));
  if (absl::Status s = WriteFileDurably(job_dir / "token", absl::StrCat(token.value, "\n"));
      !s.ok()) {
    return s;
  }
  const std::filesystem::path marker = job_dir / "token.generated";
  if (token.generated) return WriteFileDurably(marker, "");
  std::filesystem::remove(marker, ec);
  return absl::OkStatus();
}

absl::StatusOr<JobToken> ReadJobToken(const std::filesystem::path& job_dir) {
  JobToken token;
  std::ifstream in(job_dir / "token");
  if (!in) return token;
  std::stringstream content;
  content << in.rdbuf();
  token.value = std::string(absl::StripAsciiWhitespace(content.str()));
  token.generated = std::filesystem::exists(job_dir / "token.generated");
  return token;
}

bool TokensEqual(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace trainscope::collector
