// The agent's channel with TLS: against an in-process gRPC server with
// mutual TLS (certificates made by openssl at test time), an agent with the
// right files streams, one without them or with a certificate another CA
// signed never connects, and a bad file fails Agent::Start by name.
#include <stdlib.h>

#include <atomic>
#include <memory>
#include <string>

#include "fake_transport.h"  // WaitFor
#include "gmock/gmock.h"
#include "grpc_transport.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "temp_dir.h"
#include "test_certificates.h"
#include "trainscope/agent/agent.h"
#include "trainscope/security/tls_credentials.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::agent {
namespace {

using ::testing::HasSubstr;

// Acknowledges every batch.
class AckingCollector final : public v1::AgentService::Service {
 public:
  std::atomic<int> streams{0};
  std::atomic<uint64_t> events{0};

  grpc::Status Connect(grpc::ServerContext*,
                       grpc::ServerReaderWriter<v1::Control, v1::AgentMessage>* stream) override {
    ++streams;
    v1::AgentMessage message;
    if (!stream->Read(&message) || !message.has_hello()) return grpc::Status::OK;
    v1::Control ack;
    ack.mutable_hello_ack()->set_recording(message.hello().recording());
    stream->Write(ack);
    while (stream->Read(&message)) {
      if (!message.has_batch()) continue;
      events += message.batch().kind_size();
      v1::Control control;
      control.mutable_ack()->set_up_to_sequence(message.batch().sequence());
      stream->Write(control);
    }
    return grpc::Status::OK;
  }
};

class GrpcTransportTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<security::TestCertificates> certs =
        security::TestCertificates::Create(dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_.emplace(*certs);
    auto credentials = security::MakeServerCredentials({.cert_file = certs_->server_cert(),
                                                        .key_file = certs_->server_key(),
                                                        .client_ca_file = certs_->ca()});
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *credentials, &port_);
    builder.RegisterService(&collector_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  }

  AgentOptions Options() const {
    AgentOptions options;
    options.collector_address = "127.0.0.1:" + std::to_string(port_);
    options.job_id = "tls-test";
    options.flush_interval = absl::Milliseconds(5);
    options.reconnect_min = absl::Milliseconds(10);
    options.reconnect_max = absl::Milliseconds(100);
    options.log_to_stderr = false;
    return options;
  }

  security::TempDir dir_;
  std::optional<security::TestCertificates> certs_;
  AckingCollector collector_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(GrpcTransportTlsTest, AnAgentWithItsCertificateStreams) {
  AgentOptions options = Options();
  options.tls_ca_file = certs_->ca();
  options.tls_cert_file = certs_->client_cert();
  options.tls_key_file = certs_->client_key();
  auto agent = Agent::Start(options);
  ASSERT_TRUE(agent.ok()) << agent.status();
  const StringId name = (*agent)->Intern("aten::mm");
  for (int i = 0; i < 1000; ++i) (*agent)->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return (*agent)->stats().events_acked == 1000; }));
  EXPECT_EQ(collector_.events.load(), 1000u);
  (*agent)->Shutdown(absl::Seconds(2));
}

TEST_F(GrpcTransportTlsTest, PlaintextOrAStrangersCertificateNeverConnects) {
  AgentOptions plaintext = Options();
  AgentOptions stranger = Options();
  stranger.tls_ca_file = certs_->ca();
  stranger.tls_cert_file = certs_->stranger_cert();  // signed by another CA
  stranger.tls_key_file = certs_->stranger_key();
  AgentOptions no_client_cert = Options();
  no_client_cert.tls_ca_file = certs_->ca();  // TLS, but mutual TLS wants a certificate
  for (const AgentOptions& options : {plaintext, stranger, no_client_cert}) {
    auto agent = Agent::Start(options);
    ASSERT_TRUE(agent.ok()) << agent.status();
    const StringId name = (*agent)->Intern("op");
    for (int i = 0; i < 10; ++i) (*agent)->RecordOperator(name, i, i + 1, i);
    absl::SleepFor(absl::Milliseconds(500));  // many reconnect attempts at 10..100 ms
    EXPECT_FALSE((*agent)->stats().connected);
    EXPECT_EQ((*agent)->stats().events_acked, 0u);
    (*agent)->Shutdown(absl::Milliseconds(50));
  }
  // No handshake got as far as a stream.
  EXPECT_EQ(collector_.streams.load(), 0);
}

TEST_F(GrpcTransportTlsTest, ABadFileFailsStartNamingIt) {
  AgentOptions options = Options();
  options.tls_ca_file = (dir_.path() / "missing-ca.pem").string();
  auto agent = Agent::Start(options);
  ASSERT_FALSE(agent.ok());
  EXPECT_THAT(agent.status().message(), HasSubstr("TRAINSCOPE_TLS_CA"));
  EXPECT_THAT(agent.status().message(), HasSubstr("missing-ca.pem"));
  options.tls_ca_file = certs_->ca();
  options.tls_cert_file = certs_->client_cert();  // without its key
  EXPECT_THAT(Agent::Start(options).status().message(), HasSubstr("TRAINSCOPE_TLS_KEY"));
}

TEST_F(GrpcTransportTlsTest, EmptyFieldsComeFromTheEnvironment) {
  setenv("TRAINSCOPE_TLS_CA", certs_->ca().c_str(), 1);
  setenv("TRAINSCOPE_TLS_CERT", certs_->client_cert().c_str(), 1);
  setenv("TRAINSCOPE_TLS_KEY", certs_->client_key().c_str(), 1);
  setenv("TRAINSCOPE_TLS_SERVER_NAME", "localhost", 1);
  AgentOptions options = Options();
  options.tls_server_name = "explicit";  // a field beats its variable
  const security::TlsClientConfig tls = GrpcTransport::TlsConfig(options);
  EXPECT_EQ(tls.ca_file, certs_->ca());
  EXPECT_EQ(tls.cert_file, certs_->client_cert());
  EXPECT_EQ(tls.server_name, "explicit");
  options.tls_server_name.clear();
  auto agent = Agent::Start(options);  // the PyTorch plugin's case: only the environment
  for (const char* name :
       {"TRAINSCOPE_TLS_CA", "TRAINSCOPE_TLS_CERT", "TRAINSCOPE_TLS_KEY", "TRAINSCOPE_TLS_SERVER_NAME"}) {
    unsetenv(name);
  }
  ASSERT_TRUE(agent.ok()) << agent.status();
  const StringId name = (*agent)->Intern("op");
  for (int i = 0; i < 100; ++i) (*agent)->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return (*agent)->stats().events_acked == 100; }));
  (*agent)->Shutdown(absl::Seconds(2));
}

}  // namespace
}  // namespace trainscope::agent
