// The agent against a real gRPC server in the test process.
#include "grpc_transport.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_transport.h"  // WaitFor
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::agent {
namespace {

// A minimal collector: acknowledges every batch; or refuses every stream.
class TestCollector final : public v1::AgentService::Service {
 public:
  grpc::StatusCode refuse = grpc::StatusCode::OK;
  std::atomic<uint64_t> durable_up_to{0};  // survives "restarts" when shared
  std::atomic<int> streams{0};
  std::atomic<uint64_t> events{0};
  std::atomic<int> goodbyes{0};

  grpc::Status Connect(grpc::ServerContext*,
                       grpc::ServerReaderWriter<v1::Control, v1::AgentMessage>* stream) override {
    ++streams;
    v1::AgentMessage message;
    if (!stream->Read(&message) || !message.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "expected Hello first");
    }
    if (refuse != grpc::StatusCode::OK) {
      return grpc::Status(refuse, "protocol_version 1: this test refuses every stream");
    }
    v1::Control ack;
    ack.mutable_hello_ack()->set_resume_after_sequence(durable_up_to.load());
    ack.mutable_hello_ack()->set_recording(message.hello().recording());
    stream->Write(ack);
    while (stream->Read(&message)) {
      if (message.has_batch()) {
        if (message.batch().sequence() <= durable_up_to.load()) continue;  // a resend
        events += message.batch().kind_size();
        durable_up_to = message.batch().sequence();
        v1::Control control;
        control.mutable_ack()->set_up_to_sequence(message.batch().sequence());
        stream->Write(control);
      } else if (message.has_goodbye()) {
        ++goodbyes;
        return grpc::Status::OK;
      }
    }
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::Server> Serve(TestCollector* collector, int* port) {
  grpc::ServerBuilder builder;
  const std::string address = "127.0.0.1:" + std::to_string(*port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), port);
  builder.RegisterService(collector);
  return builder.BuildAndStart();
}

AgentOptions Options(int port) {
  AgentOptions options;
  options.collector_address = "127.0.0.1:" + std::to_string(port);
  options.job_id = "grpc-test";
  options.flush_interval = absl::Milliseconds(5);
  options.reconnect_min = absl::Milliseconds(10);
  options.reconnect_max = absl::Milliseconds(100);
  options.log_to_stderr = false;
  return options;
}

TEST(GrpcTransportTest, StreamsEverythingAndSaysGoodbye) {
  TestCollector collector;
  int port = 0;
  auto server = Serve(&collector, &port);
  ASSERT_NE(server, nullptr);
  auto agent = Agent::Start(Options(port));
  ASSERT_TRUE(agent.ok()) << agent.status();
  const StringId name = (*agent)->Intern("aten::mm");
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) (*agent)->RecordOperator(name, i, i + 1, i);
    });
  }
  for (auto& t : threads) t.join();
  (*agent)->Shutdown(absl::Seconds(5));
  const AgentStats stats = (*agent)->stats();
  EXPECT_EQ(stats.events_recorded + stats.dropped_ring_full, 40000u);
  EXPECT_EQ(stats.events_acked, stats.events_recorded);
  EXPECT_EQ(collector.events.load(), stats.events_recorded);
  EXPECT_EQ(collector.goodbyes.load(), 1);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
}

TEST(GrpcTransportTest, RefusedStreamIsRetriedWithBackoffNotInALoop) {
  TestCollector collector;
  collector.refuse = grpc::StatusCode::FAILED_PRECONDITION;
  int port = 0;
  auto server = Serve(&collector, &port);
  ASSERT_NE(server, nullptr);
  auto agent = Agent::Start(Options(port));
  ASSERT_TRUE(agent.ok());
  ASSERT_TRUE(WaitFor([&] { return collector.streams.load() >= 3; }));
  absl::SleepFor(absl::Milliseconds(300));
  // At reconnect_max (100 ms) 300 ms allow a handful; a spinning agent makes thousands.
  EXPECT_LT(collector.streams.load(), 30);
  EXPECT_FALSE((*agent)->stats().connected);
  (*agent)->Shutdown(absl::Milliseconds(50));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
}

TEST(GrpcTransportTest, ReconnectsToARestartedCollectorAndResumes) {
  TestCollector first;
  int port = 0;
  auto server = Serve(&first, &port);
  ASSERT_NE(server, nullptr);
  auto agent = Agent::Start(Options(port));
  ASSERT_TRUE(agent.ok());
  const StringId name = (*agent)->Intern("op");
  for (int i = 0; i < 1000; ++i) (*agent)->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return (*agent)->stats().events_acked == 1000; }));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(50));
  server->Wait();
  server.reset();

  TestCollector second;
  second.durable_up_to = first.durable_up_to.load();  // the log survived the restart
  server = Serve(&second, &port);
  ASSERT_NE(server, nullptr);
  for (int i = 0; i < 1000; ++i) (*agent)->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return (*agent)->stats().events_acked == 2000; }));
  EXPECT_GE((*agent)->stats().reconnects, 1u);
  (*agent)->Shutdown(absl::Seconds(2));
  EXPECT_EQ(first.events.load() + second.events.load(), 2000u);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace trainscope::agent
