// The Commands service of a real in-process collector while agent handshakes
// are stuck: `trainscope jobs` (ListJobs) must not wait for connection
// handling (issue 21.6: `jobs` took 9-11 s during a 1,024-stream storm).
#include "trainscope/collector/adapters/grpc_commands_service.h"

#include <chrono>
#include <memory>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/adapters/collector_server.h"
#include "trainscope/collector/publish/record_sink.h"
#include "trainscope/v1/agent.grpc.pb.h"
#include "trainscope/v1/commands.grpc.pb.h"

namespace trainscope::collector {
namespace {

using testing::HelloMessage;
using testing::MakeHello;
using testing::ScopedTempDir;

// Holds the job's pipeline thread inside the first durable record (the first
// rank's StreamOpened) until released: every HelloAck waits behind it, as
// they wait behind a busy pipeline in a connection storm.
class GateSink : public RecordSink {
 public:
  void OnDurable(absl::string_view, const v1::LogRecord&) override {
    base::MutexLock lock(&mu_);
    ++records_;
    changed_.SignalAll();
    while (!open_) changed_.Wait(&mu_);
  }
  bool WaitForFirst(absl::Duration timeout) {
    const absl::Time until = absl::Now() + timeout;
    base::MutexLock lock(&mu_);
    while (records_ == 0 && !changed_.WaitWithDeadline(&mu_, until)) {
    }
    return records_ > 0;
  }
  int records() {
    base::MutexLock lock(&mu_);
    return records_;
  }
  void Open() {
    base::MutexLock lock(&mu_);
    open_ = true;
    changed_.SignalAll();
  }

 private:
  base::Mutex mu_;
  base::CondVar changed_;
  int records_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(GrpcCommandsServiceTest, ListJobsAnswersWhileHandshakesAreInFlight) {
  ScopedTempDir dir;
  GateSink gate;
  CollectorServerOptions options;
  options.listen = "127.0.0.1:0";
  options.feed = "tcp://127.0.0.1:*";
  options.snapshot = "tcp://127.0.0.1:*";
  options.data_dir = dir.path();
  options.fsync = false;
  options.use_index = false;
  options.probe_interval = absl::ZeroDuration();
  options.record_sink = &gate;
  options.notice = [](absl::string_view) {};
  auto server = CollectorServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel =
      grpc::CreateChannel((*server)->agents_address(), grpc::InsecureChannelCredentials());
  auto agents = v1::AgentService::NewStub(channel);
  auto commands = v1::Commands::NewStub(channel);

  // 16 ranks say Hello; none gets its HelloAck while the gate holds the pipeline.
  constexpr int kRanks = 16;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::Control>>> streams;
  for (int rank = 0; rank < kRanks; ++rank) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    streams.push_back(agents->Connect(contexts.back().get()));
    ASSERT_TRUE(streams.back()->Write(HelloMessage(MakeHello("storm", rank, kRanks, 1))));
  }
  ASSERT_TRUE(gate.WaitForFirst(absl::Seconds(60))) << "no rank's stream was ever opened";

  // Wide margin: a ListJobs that waited for the pipeline would never answer here.
  grpc::ClientContext list_context;
  list_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::ListJobsResponse jobs;
  const grpc::Status listed = commands->ListJobs(&list_context, v1::ListJobsRequest(), &jobs);
  EXPECT_EQ(gate.records(), 1) << "the pipeline was not held while ListJobs ran";
  gate.Open();
  ASSERT_TRUE(listed.ok()) << listed.error_message();
  ASSERT_EQ(jobs.jobs_size(), 1);
  EXPECT_EQ(jobs.jobs(0).job_id(), "storm");

  // Released, every rank gets its HelloAck.
  for (auto& stream : streams) {
    v1::Control control;
    ASSERT_TRUE(stream->Read(&control));
    EXPECT_TRUE(control.has_hello_ack());
    stream->WritesDone();
    while (stream->Read(&control)) {
    }
    stream->Finish();
  }
  (*server)->Shutdown(absl::Seconds(5));
}

}  // namespace
}  // namespace trainscope::collector
