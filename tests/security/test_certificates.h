// Certificates and keys made at test time (never committed): a CA, a server
// certificate for localhost/127.0.0.1 and a client certificate it signed, a
// second CA with its own client (a certificate the collector must refuse),
// all EC P-256 through the `openssl` command; and CURVE key pairs from
// libzmq.
//
// Usage:
//   ASSERT_OK_AND_ASSIGN... TestCertificates certs = *TestCertificates::Create(dir);
//   server: certs.server_cert(), certs.server_key(), certs.ca();
//   client: certs.ca(), certs.client_cert(), certs.client_key();
//
// Threading: a plain value; Create runs openssl on the calling thread.
#ifndef TRAINSCOPE_TESTS_SECURITY_TEST_CERTIFICATES_H_
#define TRAINSCOPE_TESTS_SECURITY_TEST_CERTIFICATES_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "trainscope/security/curve_keys.h"

namespace trainscope::security {

class TestCertificates {
 public:
  // Writes everything under `dir` (created). Fails when openssl fails.
  static absl::StatusOr<TestCertificates> Create(const std::filesystem::path& dir);

  std::string ca() const { return (dir_ / "ca.pem").string(); }
  std::string server_cert() const { return (dir_ / "server.pem").string(); }
  std::string server_key() const { return (dir_ / "server.key").string(); }
  std::string client_cert() const { return (dir_ / "client.pem").string(); }
  std::string client_key() const { return (dir_ / "client.key").string(); }
  // Signed by another CA: refused by a collector whose --tls-client-ca is ca().
  std::string stranger_cert() const { return (dir_ / "stranger.pem").string(); }
  std::string stranger_key() const { return (dir_ / "stranger.key").string(); }
  // Signed by ca() but valid only 2020-01-01 to 2020-01-02.
  std::string expired_cert() const { return (dir_ / "expired.pem").string(); }
  std::string expired_key() const { return (dir_ / "expired.key").string(); }

  // A CURVE pair written as PREFIX.key / PREFIX.pub under the folder.
  absl::StatusOr<CurveKeyPair> WriteCurvePair(const std::string& name) const;
  std::string CurveKeyFile(const std::string& name) const {
    return (dir_ / (name + ".key")).string();
  }
  std::string CurvePublicFile(const std::string& name) const {
    return (dir_ / (name + ".pub")).string();
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  explicit TestCertificates(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

}  // namespace trainscope::security

#endif  // TRAINSCOPE_TESTS_SECURITY_TEST_CERTIFICATES_H_
