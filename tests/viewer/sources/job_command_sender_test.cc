// JobCommandSender against a scripted Commands service: the request each
// command name stands for, the outcome line, and that the RPC ran on the
// sender's worker, not on the calling thread.
#include "trainscope/viewer/job_command_sender.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "trainscope/base/mutex.h"
#include "trainscope/v1/commands.grpc.pb.h"

namespace trainscope::viewer {
namespace {

// Knows job "digits" with token "secret" and 4 ranks; keeps the last requests.
class ScriptedCommands final : public trainscope::v1::Commands::Service {
 public:
  grpc::Status SetRecording(grpc::ServerContext*,
                            const trainscope::v1::SetRecordingRequest* request,
                            trainscope::v1::CommandReply* reply) override {
    base::MutexLock lock(&mu_);
    recording_ = *request;
    if (request->token() != "secret") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "wrong token for job digits");
    }
    reply->set_ranks_reached(4);
    reply->set_message("ok");
    return grpc::Status::OK;
  }
  grpc::Status Halt(grpc::ServerContext*, const trainscope::v1::HaltJobRequest* request,
                    trainscope::v1::CommandReply* reply) override {
    base::MutexLock lock(&mu_);
    halt_ = *request;
    reply->set_ranks_reached(4);
    return grpc::Status::OK;
  }

  std::optional<trainscope::v1::SetRecordingRequest> recording() {
    base::MutexLock lock(&mu_);
    return recording_;
  }
  std::optional<trainscope::v1::HaltJobRequest> halt() {
    base::MutexLock lock(&mu_);
    return halt_;
  }

 private:
  base::Mutex mu_;
  std::optional<trainscope::v1::SetRecordingRequest> recording_ ABSL_GUARDED_BY(mu_);
  std::optional<trainscope::v1::HaltJobRequest> halt_ ABSL_GUARDED_BY(mu_);
};

class JobCommandSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  // Sends and waits for the outcome; `thread` gets the thread it came on.
  JobCommandSender::Outcome SendAndWait(JobCommandSender* sender, const std::string& command,
                                        const std::string& token, std::thread::id* thread) {
    std::promise<JobCommandSender::Outcome> promise;
    std::future<JobCommandSender::Outcome> future = promise.get_future();
    sender->Send(command, token, [&promise, thread](JobCommandSender::Outcome outcome) {
      *thread = std::this_thread::get_id();
      promise.set_value(std::move(outcome));
    });
    EXPECT_EQ(future.wait_for(std::chrono::seconds(15)), std::future_status::ready);
    return future.get();
  }

  ScriptedCommands service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(JobCommandSenderTest, LossContributionSwitchesTheHooksOnAWorker) {
  JobCommandSender sender(address_, "digits");
  std::thread::id thread;
  const JobCommandSender::Outcome outcome =
      SendAndWait(&sender, "disable-loss-contribution", "secret", &thread);
  EXPECT_NE(thread, std::this_thread::get_id());
  EXPECT_TRUE(outcome.ok);
  EXPECT_EQ(outcome.text, "disable-loss-contribution: 4 ranks reached \xE2\x80\x94 ok");
  const std::optional<trainscope::v1::SetRecordingRequest> sent = service_.recording();
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->job_id(), "digits");
  EXPECT_EQ(sent->token(), "secret");
  EXPECT_TRUE(sent->loss_contribution());
  EXPECT_FALSE(sent->enabled());
}

TEST_F(JobCommandSenderTest, RecordingLeavesTheHooksAlone) {
  JobCommandSender sender(address_, "digits");
  std::thread::id thread;
  EXPECT_TRUE(SendAndWait(&sender, "enable", "secret", &thread).ok);
  const std::optional<trainscope::v1::SetRecordingRequest> sent = service_.recording();
  ASSERT_TRUE(sent.has_value());
  EXPECT_TRUE(sent->enabled());
  EXPECT_FALSE(sent->loss_contribution());
}

TEST_F(JobCommandSenderTest, HaltSaysWhoAndWhy) {
  JobCommandSender sender(address_, "digits");
  std::thread::id thread;
  const JobCommandSender::Outcome outcome = SendAndWait(&sender, "halt", "secret", &thread);
  EXPECT_TRUE(outcome.ok);
  EXPECT_EQ(outcome.text, "halt: 4 ranks reached");
  const std::optional<trainscope::v1::HaltJobRequest> sent = service_.halt();
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->job_id(), "digits");
  EXPECT_EQ(sent->reason(), "halted from trainscope-viewer");
  EXPECT_EQ(sent->requested_by().rfind("trainscope-viewer (", 0), 0u) << sent->requested_by();
}

TEST_F(JobCommandSenderTest, ARefusalCarriesTheCollectorsReason) {
  JobCommandSender sender(address_, "digits");
  std::thread::id thread;
  const JobCommandSender::Outcome outcome =
      SendAndWait(&sender, "enable-loss-contribution", "guess", &thread);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.text.rfind("enable-loss-contribution failed: ", 0), 0u) << outcome.text;
  EXPECT_NE(outcome.text.find("wrong token for job digits"), std::string::npos) << outcome.text;
}

// Issue 23.5: a halt of a job with no connected rank was shown as success.
TEST(JobCommandSenderOutcomeTest, ACommandThatReachedNoRankIsNotASuccess) {
  const JobCommandSender::Outcome none =
      JobCommandSender::Describe("halt", 0, "halt sent to 0 connected ranks of job j");
  EXPECT_FALSE(none.ok);
  EXPECT_EQ(none.text.rfind("halt reached no rank: no rank of the job is connected", 0), 0u)
      << none.text;
  EXPECT_NE(none.text.find("halt sent to 0 connected ranks"), std::string::npos) << none.text;
  EXPECT_FALSE(JobCommandSender::Describe("enable", 0, "").ok);
  const JobCommandSender::Outcome one = JobCommandSender::Describe("disable", 1, "");
  EXPECT_TRUE(one.ok);
  EXPECT_EQ(one.text, "disable: 1 rank reached");
}

}  // namespace
}  // namespace trainscope::viewer
