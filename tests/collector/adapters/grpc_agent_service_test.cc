// The real collector server in-process on loopback (gRPC services plus the
// ZeroMQ feed), driven by raw stubs and raw sockets.
#include "trainscope/collector/adapters/grpc_agent_service.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/collector/adapters/collector_server.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/v1/agent.grpc.pb.h"
#include "trainscope/v1/commands.grpc.pb.h"
#include "zmq.hpp"

namespace trainscope::collector {
namespace {

using testing::BatchMessage;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::HelloMessage;
using testing::MakeBatch;
using testing::MakeHello;
using testing::ScopedTempDir;

constexpr int kMaxMessageBytes = 64 << 10;

struct StreamResult {
  grpc::Status status;
  std::vector<v1::Control> controls;
  std::vector<uint64_t> acks() const {
    std::vector<uint64_t> out;
    for (const auto& c : controls) {
      if (c.has_ack()) out.push_back(c.ack().up_to_sequence());
    }
    return out;
  }
};

class GrpcAgentServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CollectorServerOptions options;
    options.listen = "127.0.0.1:0";
    options.feed = "tcp://127.0.0.1:*";
    options.snapshot = "tcp://127.0.0.1:*";
    options.data_dir = dir_.path();
    options.fsync = false;
    options.use_index = false;
    options.max_message_bytes = kMaxMessageBytes;
    options.probe_interval = absl::ZeroDuration();
    options.notice = [](absl::string_view) {};
    auto server = CollectorServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto channel =
        grpc::CreateChannel(server_->agents_address(), grpc::InsecureChannelCredentials());
    agents_ = v1::AgentService::NewStub(channel);
    commands_ = v1::Commands::NewStub(channel);
  }

  void TearDown() override {
    if (server_) server_->Shutdown(absl::Seconds(2));
  }

  // Writes every message, half-closes and reads until the server ends the stream.
  StreamResult RunStream(const std::vector<v1::AgentMessage>& messages) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = agents_->Connect(&context);
    for (const auto& message : messages) {
      if (!stream->Write(message)) break;  // the server ended the stream
    }
    stream->WritesDone();
    StreamResult result;
    v1::Control control;
    while (stream->Read(&control)) result.controls.push_back(control);
    result.status = stream->Finish();
    return result;
  }

  static v1::AgentMessage Goodbye() {
    v1::AgentMessage message;
    message.mutable_goodbye();
    return message;
  }

  ScopedTempDir dir_;
  std::unique_ptr<CollectorServer> server_;
  std::unique_ptr<v1::AgentService::Stub> agents_;
  std::unique_ptr<v1::Commands::Stub> commands_;
};

TEST_F(GrpcAgentServiceTest, WrongProtocolVersionIsFailedPrecondition) {
  v1::Hello hello = MakeHello("job", 0, 1, 1);
  hello.set_protocol_version(99);
  StreamResult result = RunStream({HelloMessage(hello)});
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(result.status.error_message(),
              AllOf(HasSubstr("hello.protocol_version"), HasSubstr("protocol version 99")));
  EXPECT_EQ(server_->counters().count("hello.protocol_version"), 1u);
}

// Hand-built Hellos of agents of other versions: the collector speaks
// [kMinProtocolVersion, kProtocolVersion] and refuses only a range that does
// not meet it, naming both ends' versions.
TEST_F(GrpcAgentServiceTest, AnOlderAgentWithoutAVersionRangeIsServedInItsVersion) {
  v1::Hello hello = MakeHello("old", 0, 1, 1);
  hello.set_protocol_version(kMinProtocolVersion);  // no min_protocol_version: before negotiation
  hello.set_agent_version("0.0.9");
  StreamResult result = RunStream({HelloMessage(hello), BatchMessage(MakeBatch(1)), Goodbye()});
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.controls.empty());
  ASSERT_TRUE(result.controls.front().has_hello_ack());
  EXPECT_EQ(result.controls.front().hello_ack().protocol_version(), kMinProtocolVersion);
  EXPECT_EQ(result.acks(), (std::vector<uint64_t>{1}));
}

TEST_F(GrpcAgentServiceTest, ANewerAgentThatStillSpeaksOurVersionIsServedInOurs) {
  v1::Hello hello = MakeHello("new", 0, 1, 1);
  hello.set_protocol_version(kProtocolVersion + 3);
  hello.set_min_protocol_version(kMinProtocolVersion);
  hello.set_agent_version("9.0.0");
  // From protocol 2 on, membership is proven by answering a challenge (this
  // collector has no job key: it asks for the token it issued, none yet).
  v1::AgentMessage proof;
  proof.mutable_membership_proof();
  StreamResult result =
      RunStream({HelloMessage(hello), proof, BatchMessage(MakeBatch(1)), Goodbye()});
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_GE(result.controls.size(), 2u);
  ASSERT_TRUE(result.controls[0].has_membership_challenge());
  ASSERT_TRUE(result.controls[1].has_hello_ack());
  EXPECT_EQ(result.controls[1].hello_ack().protocol_version(), kProtocolVersion);
  EXPECT_EQ(result.acks(), (std::vector<uint64_t>{1}));
}

TEST_F(GrpcAgentServiceTest, AnAgentWithNoVersionInCommonIsRefusedNamingBoth) {
  v1::Hello hello = MakeHello("newest", 0, 1, 1);
  hello.set_protocol_version(kProtocolVersion + 5);
  hello.set_min_protocol_version(kProtocolVersion + 2);
  hello.set_agent_version("9.9.0");
  StreamResult result = RunStream({HelloMessage(hello)});
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(result.status.error_message(),
              AllOf(HasSubstr("trainscope 9.9.0"),
                    HasSubstr(absl::StrCat("protocol versions ", kProtocolVersion + 2, " to ",
                                           kProtocolVersion + 5)),
                    HasSubstr(absl::StrCat("trainscope ", kTrainscopeVersion)),
                    HasSubstr("upgrade the collector")));
  EXPECT_EQ(server_->counters().count("hello.protocol_version"), 1u);
}

TEST_F(GrpcAgentServiceTest, BatchBeforeHelloIsRefused) {
  StreamResult result = RunStream({BatchMessage(MakeBatch(1))});
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(result.status.error_message(), HasSubstr("expected hello as the first message"));
}

TEST_F(GrpcAgentServiceTest, OversizedMessageIsRefusedAndOthersAreStillServed) {
  v1::EventBatch huge = MakeBatch(1);
  huge.add_strings(std::string(kMaxMessageBytes + 1024, 'x'));
  StreamResult refused = RunStream({HelloMessage(MakeHello("job", 0, 1, 1)), BatchMessage(huge)});
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.status.error_message();

  StreamResult served =
      RunStream({HelloMessage(MakeHello("other", 0, 1, 2)), BatchMessage(MakeBatch(1)),
                 BatchMessage(MakeBatch(2)), Goodbye()});
  EXPECT_TRUE(served.status.ok()) << served.status.error_message();
  EXPECT_EQ(served.acks(), (std::vector<uint64_t>{1, 2}));
}

TEST_F(GrpcAgentServiceTest, ValidStreamIsAcknowledgedAndFollowedOnTheFeed) {
  zmq::context_t context;
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, "zjob/");
  sub.connect(server_->feed_endpoint());

  StreamResult result =
      RunStream({HelloMessage(MakeHello("zjob", 0, 2, 7, "tok")), BatchMessage(MakeBatch(1)),
                 BatchMessage(MakeBatch(2)), BatchMessage(MakeBatch(3)), Goodbye()});
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.controls.empty());
  EXPECT_TRUE(result.controls.front().has_hello_ack());
  EXPECT_EQ(result.acks(), (std::vector<uint64_t>{1, 2, 3}));

  // The feed: contiguous sequence numbers up to the rank's final state.
  std::vector<uint64_t> sequences;
  bool final_rank_seen = false;
  const absl::Time deadline = absl::Now() + testing::kWait;
  while (!final_rank_seen && absl::Now() < deadline) {
    zmq::pollitem_t items[] = {{sub.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 1, std::chrono::milliseconds(100));
    if (!(items[0].revents & ZMQ_POLLIN)) continue;
    zmq::message_t topic, payload;
    ASSERT_TRUE(sub.recv(topic));
    ASSERT_TRUE(sub.recv(payload));
    v1::FeedUpdate update;
    ASSERT_TRUE(update.ParseFromArray(payload.data(), static_cast<int>(payload.size())));
    EXPECT_EQ(update.job_id(), "zjob");
    EXPECT_EQ(topic.to_string(), FeedTopic(update));
    if (!sequences.empty()) {
      EXPECT_EQ(update.sequence(), sequences.back() + 1);
    }
    sequences.push_back(update.sequence());
    final_rank_seen =
        update.has_rank() && update.rank().said_goodbye() && update.rank().events_received() == 9;
  }
  EXPECT_TRUE(final_rank_seen);

  // A late viewer's snapshot agrees.
  zmq::socket_t req(context, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 10000);
  req.connect(server_->snapshot_endpoint());
  auto ask = [&](const std::string& job) {
    v1::SnapshotRequest request;
    request.set_job_id(job);
    req.send(zmq::buffer(request.SerializeAsString()), zmq::send_flags::none);
    zmq::message_t reply;
    EXPECT_TRUE(req.recv(reply));
    v1::FeedSnapshot snapshot;
    EXPECT_TRUE(snapshot.ParseFromArray(reply.data(), static_cast<int>(reply.size())));
    return snapshot;
  };
  v1::FeedSnapshot snapshot = ask("zjob");
  ASSERT_EQ(snapshot.jobs_size(), 1) << snapshot.error();
  ASSERT_EQ(snapshot.jobs(0).ranks_size(), 1);
  EXPECT_EQ(snapshot.jobs(0).ranks(0).events_received(), 9u);
  ASSERT_FALSE(sequences.empty());
  EXPECT_GE(snapshot.jobs(0).feed_sequence(), sequences.back());
  EXPECT_THAT(ask("nosuch").error(), HasSubstr("unknown job 'nosuch'"));

  // Commands on the same server.
  v1::HaltJobRequest halt;
  halt.set_job_id("zjob");
  halt.set_token("wrong");
  v1::CommandReply reply;
  {
    grpc::ClientContext ctx;
    grpc::Status s = commands_->Halt(&ctx, halt, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(s.error_message(), HasSubstr("wrong job token"));
  }
  {
    grpc::ClientContext ctx;
    halt.set_job_id("nosuch");
    grpc::Status s = commands_->Halt(&ctx, halt, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(s.error_message(), HasSubstr("unknown job 'nosuch'; known jobs: zjob"));
  }
  {
    grpc::ClientContext ctx;
    halt.set_job_id("zjob");
    halt.set_token("tok");
    grpc::Status s = commands_->Halt(&ctx, halt, &reply);
    // The only rank said goodbye: nothing is left to halt, and nothing is recorded.
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(s.error_message(), HasSubstr("job zjob is finished"));
  }
  {
    grpc::ClientContext ctx;
    v1::JobStatusRequest request;
    request.set_job_id("zjob");
    v1::JobStatus status;
    ASSERT_TRUE(commands_->GetJobStatus(&ctx, request, &status).ok());
    EXPECT_EQ(status.summary().state(), v1::JOB_STATE_FINISHED);
    EXPECT_EQ(status.summary().events_received(), 9u);
  }
  {
    grpc::ClientContext ctx;
    v1::ListJobsResponse jobs;
    ASSERT_TRUE(commands_->ListJobs(&ctx, v1::ListJobsRequest(), &jobs).ok());
    ASSERT_EQ(jobs.jobs_size(), 1);
    EXPECT_EQ(jobs.jobs(0).job_id(), "zjob");
  }
}

TEST_F(GrpcAgentServiceTest, ReconnectResumesAfterTheLastDurableBatch) {
  StreamResult first = RunStream({HelloMessage(MakeHello("r", 0, 1, 5)),
                                  BatchMessage(MakeBatch(1)), BatchMessage(MakeBatch(2))});
  ASSERT_TRUE(first.status.ok());
  ASSERT_TRUE(!first.controls.empty() && first.controls.front().has_hello_ack());
  // A rank seen before proves it belongs to the job with the token its first
  // HelloAck carried (the agent keeps it for its reconnects).
  v1::Hello hello = MakeHello("r", 0, 1, 5);
  hello.set_job_token(first.controls.front().hello_ack().job_token());
  StreamResult again =
      RunStream({HelloMessage(hello), BatchMessage(MakeBatch(3)), Goodbye()});
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  ASSERT_TRUE(again.controls.front().has_hello_ack());
  EXPECT_EQ(again.controls.front().hello_ack().resume_after_sequence(), 2u);
  EXPECT_EQ(again.acks(), (std::vector<uint64_t>{3}));
}

}  // namespace
}  // namespace trainscope::collector
