#include "trainscope/security/pem_file.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"
#include "test_certificates.h"

namespace trainscope::security {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(PemFileTest, ReadsRealCertificatesAndKeys) {
  TempDir dir;
  absl::StatusOr<TestCertificates> certs = TestCertificates::Create(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  absl::StatusOr<std::string> cert =
      ReadPemFile(certs->server_cert(), "--tls-cert", PemKind::kCertificate);
  ASSERT_TRUE(cert.ok()) << cert.status();
  EXPECT_THAT(*cert, HasSubstr("-----BEGIN CERTIFICATE-----"));
  absl::StatusOr<std::string> key =
      ReadPemFile(certs->server_key(), "--tls-key", PemKind::kPrivateKey);
  ASSERT_TRUE(key.ok()) << key.status();
}

TEST(PemFileTest, AnExpiredCertificateIsRefusedWithItsDate) {
  TempDir dir;
  absl::StatusOr<TestCertificates> certs = TestCertificates::Create(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  absl::StatusOr<std::string> cert =
      ReadPemFile(certs->expired_cert(), "--tls-cert", PemKind::kCertificate);
  ASSERT_FALSE(cert.ok());
  EXPECT_EQ(cert.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cert.status().message(), HasSubstr("--tls-cert: the certificate in '"));
  EXPECT_THAT(cert.status().message(), HasSubstr("CN=expired"));
  EXPECT_THAT(cert.status().message(), HasSubstr("expired on Jan  2 00:00:00 2020 GMT"));
  // Its key is read as before: only certificates have dates.
  EXPECT_TRUE(ReadPemFile(certs->expired_key(), "--tls-key", PemKind::kPrivateKey).ok());
}

TEST(PemFileTest, AMissingFileNamesTheFlagThePathAndWhatWasExpected) {
  absl::StatusOr<std::string> pem =
      ReadPemFile("/nonexistent/server.pem", "--tls-cert", PemKind::kCertificate);
  ASSERT_FALSE(pem.ok());
  EXPECT_EQ(pem.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(pem.status().message(),
              AllOf(HasSubstr("--tls-cert"), HasSubstr("/nonexistent/server.pem"),
                    HasSubstr("No such file"), HasSubstr("PEM certificate")));
}

TEST(PemFileTest, AKeyGivenAsTheCertificateAndTheOtherWayRoundAreRefused) {
  TempDir dir;
  absl::StatusOr<TestCertificates> certs = TestCertificates::Create(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  absl::StatusOr<std::string> cert =
      ReadPemFile(certs->server_key(), "--tls-cert", PemKind::kCertificate);
  EXPECT_THAT(cert.status().message(), HasSubstr("is not a PEM certificate"));
  absl::StatusOr<std::string> key =
      ReadPemFile(certs->server_cert(), "--tls-key", PemKind::kPrivateKey);
  EXPECT_THAT(key.status().message(), AllOf(HasSubstr("--tls-key"), HasSubstr("PEM private key")));
  EXPECT_THAT(ReadPemFile("", "--tls-key", PemKind::kPrivateKey).status().message(),
              HasSubstr("empty path"));
}

}  // namespace
}  // namespace trainscope::security
