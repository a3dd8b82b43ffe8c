// The credentials' rules; the handshakes themselves are tested against the
// real collector (tests/collector/adapters/collector_server_security_test.cc)
// and the agent (tests/agent/grpc_transport_tls_test.cc).
#include "trainscope/security/tls_credentials.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"
#include "test_certificates.h"

namespace trainscope::security {
namespace {

using ::testing::HasSubstr;

TEST(TlsCredentialsTest, NothingGivenIsPlaintextOnBothSides) {
  EXPECT_FALSE(TlsServerConfig().enabled());
  EXPECT_FALSE(TlsClientConfig().enabled());
  EXPECT_TRUE(MakeServerCredentials({}).ok());
  EXPECT_TRUE(MakeChannelCredentials({}, nullptr).ok());
}

TEST(TlsCredentialsTest, ServerNeedsCertificateAndKeyTogether) {
  TempDir dir;
  absl::StatusOr<TestCertificates> certs = TestCertificates::Create(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  auto only_cert = MakeServerCredentials({.cert_file = certs->server_cert()});
  EXPECT_THAT(only_cert.status().message(), HasSubstr("--tls-cert and --tls-key go together"));
  auto only_ca = MakeServerCredentials({.client_ca_file = certs->ca()});
  EXPECT_FALSE(only_ca.ok());
  auto mutual = MakeServerCredentials(
      {.cert_file = certs->server_cert(), .key_file = certs->server_key(), .client_ca_file = certs->ca()});
  EXPECT_TRUE(mutual.ok()) << mutual.status();
  auto bad_ca = MakeServerCredentials({.cert_file = certs->server_cert(),
                                       .key_file = certs->server_key(),
                                       .client_ca_file = certs->server_key()});
  EXPECT_THAT(bad_ca.status().message(), HasSubstr("--tls-client-ca"));
}

TEST(TlsCredentialsTest, ClientRulesNameTheFlagAndTheVariable) {
  TempDir dir;
  absl::StatusOr<TestCertificates> certs = TestCertificates::Create(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  auto half = MakeChannelCredentials({.ca_file = certs->ca(), .cert_file = certs->client_cert()}, nullptr);
  EXPECT_THAT(half.status().message(), HasSubstr("TRAINSCOPE_TLS_KEY"));
  auto missing = MakeChannelCredentials({.ca_file = (dir.path() / "nope.pem").string()}, nullptr);
  EXPECT_THAT(missing.status().message(), HasSubstr("--tls-ca (TRAINSCOPE_TLS_CA)"));
  grpc::ChannelArguments args;
  auto full = MakeChannelCredentials({.ca_file = certs->ca(),
                                      .cert_file = certs->client_cert(),
                                      .key_file = certs->client_key(),
                                      .server_name = "localhost"},
                                     &args);
  EXPECT_TRUE(full.ok()) << full.status();
}

}  // namespace
}  // namespace trainscope::security
