#include "trainscope/security/pem_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trainscope::security {
namespace {

constexpr size_t kMaxPemBytes = 1 << 20;

}  // namespace

absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view label,
                                        PemKind kind) {
  const char* expected = kind == PemKind::kCertificate
                             ? "a PEM certificate (-----BEGIN CERTIFICATE-----)"
                             : "a PEM private key (-----BEGIN ... PRIVATE KEY-----)";
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": empty path; expected ", expected));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": cannot read '", path,
                                                   "': ", std::strerror(errno), "; expected ",
                                                   expected));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string pem = contents.str();
  if (pem.size() > kMaxPemBytes) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": '", path, "' holds ", pem.size(),
                                                   " bytes; expected ", expected,
                                                   " of at most 1 MiB"));
  }
  const bool found = kind == PemKind::kCertificate
                         ? absl::StrContains(pem, "-----BEGIN CERTIFICATE-----")
                         : absl::StrContains(pem, "PRIVATE KEY-----");
  if (!found) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": '", path, "' is not ", expected));
  }
  return pem;
}

}  // namespace trainscope::security
