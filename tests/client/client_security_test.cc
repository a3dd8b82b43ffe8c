#include "trainscope/client/client_security.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "temp_dir.h"
#include "test_certificates.h"
#include "trainscope/client/connection_options.h"

namespace trainscope::client {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](std::string_view name) -> std::optional<std::string> {
    auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

absl::StatusOr<ClientSecurity> Resolve(const std::vector<std::string>& argv, const EnvLookup& env) {
  base::ArgParser parser("test", "security flags");
  ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);  // they come with the connection flags
  absl::StatusOr<base::ParsedArgs> args = parser.Parse(argv);
  if (!args.ok()) return args.status();
  absl::StatusOr<ConnectionOptions> options = ConnectionOptions::Resolve(*args, env);
  if (!options.ok()) return options.status();
  return options->security;
}

class ClientSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto certs = security::TestCertificates::Create(dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_.emplace(*certs);
    auto collector = certs_->WriteCurvePair("collector");
    auto viewer = certs_->WriteCurvePair("viewer");
    ASSERT_TRUE(collector.ok() && viewer.ok());
    collector_ = *collector;
    viewer_ = *viewer;
    std::ofstream(dir_.path() / "token") << "  secret-read-token\n";
  }

  security::TempDir dir_;
  std::optional<security::TestCertificates> certs_;
  security::CurveKeyPair collector_, viewer_;
};

TEST_F(ClientSecurityTest, NothingGivenIsPlaintextAsToday) {
  absl::StatusOr<ClientSecurity> security = Resolve({}, Env({}));
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_EQ(security->grpc_credentials, nullptr);
  EXPECT_TRUE(security->read_token.empty());
  EXPECT_TRUE(security->curve_server_key.empty());
  EXPECT_FALSE(security->curve_client.has_value());
}

TEST_F(ClientSecurityTest, FlagsBeatVariablesAndEverythingIsLoaded) {
  absl::StatusOr<ClientSecurity> security = Resolve(
      {"--tls-ca", certs_->ca(), "--read-token-file", (dir_.path() / "token").string(),
       "--curve-server-key", certs_->CurvePublicFile("collector"), "--curve-key",
       certs_->CurveKeyFile("viewer")},
      Env({{"TRAINSCOPE_TLS_CA", "/nonexistent/ca.pem"},
           {"TRAINSCOPE_TLS_CERT", certs_->client_cert()},
           {"TRAINSCOPE_TLS_KEY", certs_->client_key()},
           {"TRAINSCOPE_TLS_SERVER_NAME", "localhost"}}));
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_EQ(security->tls.ca_file, certs_->ca());  // the flag, not the variable
  EXPECT_EQ(security->tls.cert_file, certs_->client_cert());
  EXPECT_EQ(security->tls.server_name, "localhost");
  EXPECT_NE(security->grpc_credentials, nullptr);
  EXPECT_EQ(security->read_token, "secret-read-token");  // trimmed
  EXPECT_EQ(security->curve_server_key, collector_.public_key);
  ASSERT_TRUE(security->curve_client.has_value());
  EXPECT_EQ(security->curve_client->public_key, viewer_.public_key);
}

TEST_F(ClientSecurityTest, WithoutItsOwnKeyAClientGetsAFreshOne) {
  absl::StatusOr<ClientSecurity> security =
      Resolve({}, Env({{"TRAINSCOPE_CURVE_SERVER_KEY", collector_.public_key}}));
  ASSERT_TRUE(security.ok()) << security.status();
  ASSERT_TRUE(security->curve_client.has_value());
  EXPECT_NE(security->curve_client->public_key, viewer_.public_key);
  EXPECT_EQ(security->curve_client->public_key.size(), security::kCurveKeyZ85Length);
}

TEST_F(ClientSecurityTest, BadInputNamesTheFlagAndTheVariable) {
  EXPECT_THAT(Resolve({"--tls-cert", certs_->client_cert()}, Env({})).status().message(),
              HasSubstr("TRAINSCOPE_TLS_KEY"));
  EXPECT_THAT(Resolve({}, Env({{"TRAINSCOPE_TLS_CA", "/nonexistent/ca.pem"}})).status().message(),
              AllOf(HasSubstr("--tls-ca (TRAINSCOPE_TLS_CA)"), HasSubstr("/nonexistent/ca.pem")));
  EXPECT_THAT(Resolve({"--curve-key", certs_->CurveKeyFile("viewer")}, Env({})).status().message(),
              HasSubstr("needs --curve-server-key"));
  EXPECT_THAT(Resolve({"--curve-server-key", "not-a-key"}, Env({})).status().message(),
              HasSubstr("--curve-server-key (TRAINSCOPE_CURVE_SERVER_KEY)"));
  std::ofstream(dir_.path() / "empty-token") << "\n";
  EXPECT_THAT(Resolve({"--read-token-file", (dir_.path() / "empty-token").string()}, Env({}))
                  .status()
                  .message(),
              AllOf(HasSubstr("--read-token-file"), HasSubstr("is empty")));
}

}  // namespace
}  // namespace trainscope::client
