// The real collector server in-process with its security on (certificates
// from openssl and CURVE keys from libzmq, made at test time): every port
// refuses a client without the right credentials with a clear error, a
// client with them works, and a port beyond loopback is refused at start
// without encryption unless --insecure.
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test_certificates.h"
#include "testing/collector_test_util.h"
#include "trainscope/client/commands_client.h"
#include "trainscope/client/snapshot_client.h"
#include "trainscope/client/zmq_feed_source.h"
#include "trainscope/collector/adapters/collector_server.h"
#include "trainscope/collector/adapters/grpc_agent_service.h"
#include "trainscope/security/tls_credentials.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::collector {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ScopedTempDir;

CollectorServerOptions BaseOptions(const std::filesystem::path& data_dir) {
  CollectorServerOptions options;
  options.listen = "127.0.0.1:0";
  options.feed = "tcp://127.0.0.1:*";
  options.snapshot = "tcp://127.0.0.1:*";
  options.data_dir = data_dir;
  options.fsync = false;
  options.use_index = false;
  options.probe_interval = absl::ZeroDuration();
  options.notice = [](absl::string_view) {};
  return options;
}

class CollectorServerSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto certs = security::TestCertificates::Create(dir_.path() / "certs");
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_.emplace(*certs);
    auto server_keys = certs_->WriteCurvePair("collector");
    auto client_keys = certs_->WriteCurvePair("viewer");
    auto stranger_keys = certs_->WriteCurvePair("curve-stranger");
    ASSERT_TRUE(server_keys.ok()) << server_keys.status();
    ASSERT_TRUE(client_keys.ok()) << client_keys.status();
    ASSERT_TRUE(stranger_keys.ok()) << stranger_keys.status();
    server_keys_ = *server_keys;
    client_keys_ = *client_keys;
    stranger_keys_ = *stranger_keys;
    std::ofstream(dir_.path() / "clients") << "# allowed\n" << client_keys_.public_key << "\n";
    std::ofstream(dir_.path() / "read-token") << "0123456789abcdef0123456789abcdef\n";
  }

  CollectorServerOptions SecureOptions() const {
    CollectorServerOptions options = BaseOptions(dir_.path() / "data");
    options.tls = {certs_->server_cert(), certs_->server_key(), certs_->ca()};
    options.curve_secret_key_file = certs_->CurveKeyFile("collector");
    options.curve_client_keys_file = (dir_.path() / "clients").string();
    options.read_token_file = (dir_.path() / "read-token").string();
    return options;
  }

  void StartSecure() {
    auto server = CollectorServer::Start(SecureOptions());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(absl::Seconds(2));
  }

  // A client with everything: mutual TLS, the read token, a listed CURVE key.
  client::ClientSecurity FullClient() const {
    client::ClientSecurity security;
    security.tls = {certs_->ca(), certs_->client_cert(), certs_->client_key(), ""};
    security.grpc_credentials = *security::MakeChannelCredentials(security.tls, nullptr);
    security.read_token = "0123456789abcdef0123456789abcdef";
    security.curve_server_key = server_keys_.public_key;
    security.curve_client = client_keys_;
    return security;
  }

  ScopedTempDir dir_;
  std::optional<security::TestCertificates> certs_;
  security::CurveKeyPair server_keys_, client_keys_, stranger_keys_;
  std::unique_ptr<CollectorServer> server_;
};

TEST_F(CollectorServerSecurityTest, CommandsWithEveryCredentialWork) {
  StartSecure();
  client::CommandsClient commands(server_->agents_address(), absl::Seconds(10), FullClient());
  absl::StatusOr<v1::ListJobsResponse> jobs = commands.ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->jobs_size(), 0);
  // The snapshot server answers (here: that the job is unknown).
  client::SnapshotClient snapshots(server_->snapshot_endpoint(), nullptr, FullClient());
  v1::SnapshotRequest request;
  request.set_job_id("nojob");
  absl::StatusOr<v1::FeedSnapshot> snapshot = snapshots.Request(request, absl::Seconds(10));
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(snapshot->error(), HasSubstr("nojob"));
}

TEST_F(CollectorServerSecurityTest, TheGrpcPortRefusesPlaintextAndStrangers) {
  StartSecure();
  client::ClientSecurity plaintext = FullClient();
  plaintext.grpc_credentials = nullptr;
  client::CommandsClient plain(server_->agents_address(), absl::Seconds(3), plaintext);
  absl::Status status = plain.ListJobs().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("refuses plaintext clients"), HasSubstr("--tls-ca")));

  client::ClientSecurity stranger = FullClient();
  stranger.tls.cert_file = certs_->stranger_cert();
  stranger.tls.key_file = certs_->stranger_key();
  stranger.grpc_credentials = *security::MakeChannelCredentials(stranger.tls, nullptr);
  client::CommandsClient strange(server_->agents_address(), absl::Seconds(3), stranger);
  status = strange.ListJobs().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("with TLS: check --tls-ca, --tls-cert"));

  // The agent service on the same port: a plaintext agent's stream fails.
  auto channel =
      grpc::CreateChannel(server_->agents_address(), grpc::InsecureChannelCredentials());
  auto agents = v1::AgentService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  auto stream = agents->Connect(&context);
  stream->WritesDone();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(server_->agent_service().streams_served(), 0u);
}

TEST_F(CollectorServerSecurityTest, ReadsNeedTheReadToken) {
  StartSecure();
  client::ClientSecurity no_token = FullClient();
  no_token.read_token.clear();
  absl::Status status =
      client::CommandsClient(server_->agents_address(), absl::Seconds(5), no_token).ListJobs().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("give its read token (--read-token-file"));
  client::ClientSecurity wrong = FullClient();
  wrong.read_token = "fedcba9876543210fedcba9876543210";
  status = client::CommandsClient(server_->agents_address(), absl::Seconds(5), wrong)
               .GetJobStatus("nojob")
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("not this collector's"));
}

TEST_F(CollectorServerSecurityTest, TheSnapshotPortRefusesNoCurveAndUnlistedKeys) {
  StartSecure();
  v1::SnapshotRequest request;
  request.set_job_id("nojob");
  client::SnapshotClient plain(server_->snapshot_endpoint(), nullptr, {});
  absl::Status status = plain.Request(request, absl::Seconds(3)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("security mechanisms differ"),
                                      HasSubstr("--curve-server-key")));

  client::ClientSecurity stranger = FullClient();
  stranger.curve_client = stranger_keys_;
  client::SnapshotClient unlisted(server_->snapshot_endpoint(), nullptr, stranger);
  status = unlisted.Request(request, absl::Seconds(3)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("not on the collector's --curve-client-keys"));
  EXPECT_GE(server_->publisher().clients_refused(), 1u);
}

TEST_F(CollectorServerSecurityTest, TheFeedPortRefusesNoCurveAndUnlistedKeys) {
  StartSecure();
  for (const client::ClientSecurity& security :
       {client::ClientSecurity(), [&] {
          client::ClientSecurity s = FullClient();
          s.curve_client = stranger_keys_;
          return s;
        }()}) {
    client::ZmqFeedSource feed(server_->feed_endpoint(), server_->snapshot_endpoint(), nullptr,
                               security);
    ASSERT_TRUE(feed.Subscribe("").ok());
    absl::StatusOr<std::optional<v1::FeedUpdate>> update = feed.Receive(absl::Seconds(3));
    ASSERT_FALSE(update.ok());
    EXPECT_EQ(update.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_THAT(update.status().message(), HasSubstr("the live feed at"));
  }
  // A listed client subscribes; silence (no job publishes) is not an error.
  client::ZmqFeedSource feed(server_->feed_endpoint(), server_->snapshot_endpoint(), nullptr,
                             FullClient());
  ASSERT_TRUE(feed.Subscribe("").ok());
  absl::StatusOr<std::optional<v1::FeedUpdate>> update = feed.Receive(absl::Milliseconds(500));
  ASSERT_TRUE(update.ok()) << update.status();
}

TEST_F(CollectorServerSecurityTest, BeyondLoopbackStartRefusesWhatIsMissingByFlag) {
  CollectorServerOptions options = BaseOptions(dir_.path() / "data");
  options.listen = "0.0.0.0:0";
  absl::Status status = CollectorServer::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("--listen 0.0.0.0:0 is beyond loopback"),
                                      HasSubstr("--tls-cert"), HasSubstr("--insecure")));

  options.tls = {certs_->server_cert(), certs_->server_key(), ""};  // TLS, nothing gates reads
  status = CollectorServer::Start(options).status();
  EXPECT_THAT(status.message(), AllOf(HasSubstr("--tls-client-ca"), HasSubstr("--read-token-file")));

  options = SecureOptions();
  options.feed = "tcp://*:0";
  options.curve_client_keys_file.clear();
  status = CollectorServer::Start(options).status();
  EXPECT_THAT(status.message(), AllOf(HasSubstr("--feed tcp://*:0 is beyond loopback"),
                                      HasSubstr("--curve-client-keys")));

  options = SecureOptions();
  options.metrics = "0.0.0.0:0";
  EXPECT_THAT(CollectorServer::Start(options).status().message(), HasSubstr("--metrics-host"));

  // Everything given: the network is allowed.
  options = SecureOptions();
  options.listen = "0.0.0.0:0";
  options.feed = options.snapshot = "tcp://*:*";
  auto secured = CollectorServer::Start(options);
  ASSERT_TRUE(secured.ok()) << secured.status();
  (*secured)->Shutdown(absl::Seconds(1));
  secured->reset();

  // --insecure: the operator's word for a trusted network.
  options = BaseOptions(dir_.path() / "data");
  options.listen = "0.0.0.0:0";
  options.feed = options.snapshot = "tcp://*:*";
  options.insecure = true;
  auto insecure = CollectorServer::Start(options);
  ASSERT_TRUE(insecure.ok()) << insecure.status();
  (*insecure)->Shutdown(absl::Seconds(1));
}

TEST_F(CollectorServerSecurityTest, BadSecurityFilesFailStartByFlag) {
  CollectorServerOptions options = SecureOptions();
  options.tls.cert_file = (dir_.path() / "missing.pem").string();
  EXPECT_THAT(CollectorServer::Start(options).status().message(),
              AllOf(HasSubstr("--tls-cert"), HasSubstr("missing.pem")));
  options = SecureOptions();
  options.curve_secret_key_file = certs_->CurvePublicFile("collector");  // fine: one key...
  options.curve_client_keys_file = certs_->server_cert();                // not a key list
  EXPECT_THAT(CollectorServer::Start(options).status().message(),
              HasSubstr("--curve-client-keys"));
  options = SecureOptions();
  options.curve_secret_key_file.clear();
  EXPECT_THAT(CollectorServer::Start(options).status().message(),
              HasSubstr("--curve-client-keys needs --curve-secret-key"));
  options = SecureOptions();
  std::ofstream(dir_.path() / "short-token") << "abc\n";
  options.read_token_file = (dir_.path() / "short-token").string();
  EXPECT_THAT(CollectorServer::Start(options).status().message(),
              AllOf(HasSubstr("--read-token-file"), HasSubstr("at least 16")));
}

}  // namespace
}  // namespace trainscope::collector
