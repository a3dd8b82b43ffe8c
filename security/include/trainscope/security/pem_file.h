// Reads a certificate or private key file named by a flag, so that a wrong
// path or a file of the wrong kind fails at start with a message naming the
// flag, the path and what was expected, instead of as an opaque TLS
// handshake failure later.
//
// Usage:
//   ASSIGN_OR_RETURN(std::string pem, ReadPemFile(path, "--tls-cert", PemKind::kCertificate));
//
// Threading: a free function; reads the file on the calling thread.
#ifndef TRAINSCOPE_SECURITY_PEM_FILE_H_
#define TRAINSCOPE_SECURITY_PEM_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainscope::security {

enum class PemKind {
  kCertificate,  // "-----BEGIN CERTIFICATE-----" (a chain, or CA bundle)
  kPrivateKey,   // "-----BEGIN ... PRIVATE KEY-----" (PKCS#8, RSA or EC)
};

// The file's contents. `label` names where the path came from ("--tls-cert",
// "TRAINSCOPE_TLS_CA") and starts every error. Files over 1 MiB are refused
// (no PEM file of ours is that large; a mistyped path to a log is). For a
// certificate file, its first certificate (a chain's leaf) must be valid now:
// FAILED_PRECONDITION naming the subject and the date when it expired or is
// not yet valid.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view label,
                                        PemKind kind);

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_PEM_FILE_H_
