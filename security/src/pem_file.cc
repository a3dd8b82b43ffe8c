#include "trainscope/security/pem_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "openssl/asn1.h"
#include "openssl/bio.h"
#include "openssl/pem.h"
#include "openssl/x509.h"

namespace trainscope::security {
namespace {

constexpr size_t kMaxPemBytes = 1 << 20;

std::string TimeText(const ASN1_TIME* time) {
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), BIO_free);
  if (out == nullptr || ASN1_TIME_print(out.get(), time) != 1) return "(unreadable time)";
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

// The first certificate of the file (the leaf of a chain) must be valid now:
// an expired one is otherwise refused by the peer with a handshake error
// that names neither the file nor the date.
absl::Status CheckValidNow(const std::string& pem, const std::string& path,
                           absl::string_view label) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      in == nullptr ? nullptr : PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr), X509_free);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": '", path,
                     "' holds a certificate block OpenSSL cannot parse; expected a PEM "
                     "X.509 certificate"));
  }
  char subject[256] = {0};
  X509_NAME_oneline(X509_get_subject_name(cert.get()), subject, sizeof(subject) - 1);
  const ASN1_TIME* not_after = X509_get0_notAfter(cert.get());
  const ASN1_TIME* not_before = X509_get0_notBefore(cert.get());
  if (X509_cmp_current_time(not_after) <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(label, ": the certificate in '", path, "' (",
                                                      subject, ") expired on ", TimeText(not_after),
                                                      "; expected one valid now: renew it"));
  }
  if (X509_cmp_current_time(not_before) >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        label, ": the certificate in '", path, "' (", subject, ") is not valid before ",
        TimeText(not_before), "; expected one valid now: check this host's clock"));
  }
  return absl::OkStatus();
}

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
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": cannot read '", path, "': ", std::strerror(errno), "; expected ", expected));
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
    return absl::InvalidArgumentError(absl::StrCat(label, ": '", path, "' is not ", expected));
  }
  if (kind == PemKind::kCertificate) {
    if (absl::Status s = CheckValidNow(pem, path, label); !s.ok()) return s;
  }
  return pem;
}

}  // namespace trainscope::security
