// The subcommands run in-process through RunCli against a scripted Commands
// service, checking what they print and their exit codes.
#include "trainscope/cli/cli.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <sstream>

#include "trainscope/base/mutex.h"
#include "trainscope/v1/commands.grpc.pb.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Knows one job, "resnet", whose token is "secret".
class ScriptedCommands final : public trainscope::v1::Commands::Service {
 public:
  grpc::Status ListJobs(grpc::ServerContext*, const trainscope::v1::ListJobsRequest*,
                        trainscope::v1::ListJobsResponse* response) override {
    if (!no_jobs) {
      trainscope::v1::JobSummary* job = response->add_jobs();
      job->set_job_id("resnet");
      job->set_state(trainscope::v1::JOB_STATE_RUNNING);
      job->set_world_size(2);
      job->set_ranks_connected(2);
      job->set_events_received(5000);
    }
    return grpc::Status::OK;
  }
  grpc::Status GetJobStatus(grpc::ServerContext*, const trainscope::v1::JobStatusRequest* request,
                            trainscope::v1::JobStatus* response) override {
    if (request->job_id() != "resnet") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no job '" + request->job_id() + "'");
    }
    response->mutable_summary()->set_job_id("resnet");
    trainscope::v1::RankStatus* rank = response->add_ranks();
    rank->set_rank(1);
    rank->set_host("node-x");
    return grpc::Status::OK;
  }
  grpc::Status SetRecording(grpc::ServerContext*,
                            const trainscope::v1::SetRecordingRequest* request,
                            trainscope::v1::CommandReply* reply) override {
    base::MutexLock lock(&mu);
    last_recording = *request;
    if (request->token() != "secret") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "wrong token for job resnet");
    }
    reply->set_ranks_reached(2);
    return grpc::Status::OK;
  }
  grpc::Status Halt(grpc::ServerContext*, const trainscope::v1::HaltJobRequest* request,
                    trainscope::v1::CommandReply* reply) override {
    base::MutexLock lock(&mu);
    last_halt = *request;
    if (request->token() != "secret") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "wrong token for job resnet");
    }
    reply->set_ranks_reached(1);
    return grpc::Status::OK;
  }

  bool no_jobs = false;
  base::Mutex mu;
  trainscope::v1::HaltJobRequest last_halt ABSL_GUARDED_BY(mu);
  trainscope::v1::SetRecordingRequest last_recording ABSL_GUARDED_BY(mu);
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  // Runs `trainscope ARGS` with TRAINSCOPE_COLLECTOR pointing at the fake.
  int Run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    env.emplace("TRAINSCOPE_COLLECTOR", address_);
    out_.str("");
    err_.str("");
    CommandContext ctx;
    ctx.out = &out_;
    ctx.err = &err_;
    ctx.env = [env](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    ctx.requested_by = "tester@box";
    return RunCli(args, ctx);
  }

  ScriptedCommands service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(CliTest, UsageAndVersion) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{}, {"help"}, {"--help"}}) {
    EXPECT_EQ(Run(args), 0);
    for (const char* command : {"jobs", "status", "tail", "halt", "enable", "disable", "replay"}) {
      EXPECT_THAT(out_.str(), HasSubstr(std::string("  ") + command + " "));
    }
  }
  EXPECT_EQ(Run({"--version"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("trainscope 0.1.0"));
}

TEST_F(CliTest, HelpForASubcommand) {
  EXPECT_EQ(Run({"help", "tail"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("Usage: trainscope tail JOB"));
  EXPECT_THAT(out_.str(), HasSubstr("--kinds"));
  EXPECT_EQ(Run({"replay", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("--as-job NAME"));
  EXPECT_THAT(out_.str(), HasSubstr("--speed X"));
}

TEST_F(CliTest, UnknownSubcommandIsAUsageError) {
  EXPECT_EQ(Run({"hlat"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unknown command 'hlat'"));
  EXPECT_THAT(err_.str(), HasSubstr("halt"));
}

TEST_F(CliTest, JobsTableAndJson) {
  EXPECT_EQ(Run({"jobs"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("resnet"));
  EXPECT_THAT(out_.str(), HasSubstr("2/2"));
  EXPECT_THAT(out_.str(), HasSubstr("5,000"));
  EXPECT_EQ(Run({"jobs", "--json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"job_id\":\"resnet\""));
  service_.no_jobs = true;
  EXPECT_EQ(Run({"jobs"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("no jobs yet"));
}

TEST_F(CliTest, CollectorFlagBeatsEnvironment) {
  EXPECT_EQ(Run({"jobs", "--collector", "127.0.0.1:1", "--timeout", "2"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cannot reach the collector at 127.0.0.1:1"));
  EXPECT_THAT(err_.str(), HasSubstr("TRAINSCOPE_COLLECTOR"));
}

TEST_F(CliTest, StatusOfAKnownAndAnUnknownJob) {
  EXPECT_EQ(Run({"status", "resnet"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("job resnet"));
  EXPECT_THAT(out_.str(), HasSubstr("node-x"));
  EXPECT_EQ(Run({"status", "nope"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("trainscope status: no job 'nope'"));
  EXPECT_EQ(Run({"status"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("missing JOB"));
  EXPECT_EQ(Run({"status", "bad job"}), 2);
}

TEST_F(CliTest, HaltSendsTokenReasonAndRequester) {
  EXPECT_EQ(Run({"halt", "resnet", "--reason", "stragglers", "--token", "secret"}), 0);
  EXPECT_EQ(out_.str(), "halt sent to job resnet: reached 1 rank\n");
  base::MutexLock lock(&service_.mu);
  EXPECT_EQ(service_.last_halt.job_id(), "resnet");
  EXPECT_EQ(service_.last_halt.reason(), "stragglers");
  EXPECT_EQ(service_.last_halt.requested_by(), "tester@box");
}

TEST_F(CliTest, HaltTokenFromEnvironment) {
  EXPECT_EQ(Run({"halt", "resnet", "--reason", "r"}, {{"TRAINSCOPE_TOKEN", "secret"}}), 0);
}

TEST_F(CliTest, HaltWithWrongTokenShowsTheCollectorsRefusal) {
  EXPECT_EQ(Run({"halt", "resnet", "--reason", "r", "--token", "guess"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("wrong token for job resnet"));
  EXPECT_THAT(out_.str(), IsEmpty());
}

TEST_F(CliTest, HaltWithoutTokenOrReasonNeverCallsTheCollector) {
  EXPECT_EQ(Run({"halt", "resnet", "--reason", "r"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--token TOKEN, --token-file FILE, or the TRAINSCOPE_TOKEN"));
  EXPECT_EQ(Run({"halt", "resnet", "--token", "secret"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--reason TEXT is required"));
  base::MutexLock lock(&service_.mu);
  EXPECT_EQ(service_.last_halt.job_id(), "");
}

TEST_F(CliTest, EnableAndDisable) {
  EXPECT_EQ(Run({"enable", "resnet", "--token", "secret", "--sampling", "10"}), 0);
  EXPECT_THAT(out_.str(),
              HasSubstr("recording on for job resnet (one in 10 operators): reached 2"));
  {
    base::MutexLock lock(&service_.mu);
    EXPECT_TRUE(service_.last_recording.enabled());
    EXPECT_EQ(service_.last_recording.sampling_period(), 10u);
  }
  EXPECT_EQ(Run({"disable", "resnet", "--token", "secret", "--json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"ranks_reached\":2"));
  {
    base::MutexLock lock(&service_.mu);
    EXPECT_FALSE(service_.last_recording.enabled());
  }
  EXPECT_EQ(Run({"disable", "resnet", "--token", "x"}), 1);
  EXPECT_EQ(Run({"enable", "resnet", "--token", "secret", "--sampling", "-1"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--sampling"));
}

TEST_F(CliTest, LossContributionSwitchIsItsOwnRequest) {
  EXPECT_EQ(Run({"disable", "resnet", "--loss-contribution", "--token", "secret"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("loss contribution off for job resnet: reached 2"));
  {
    base::MutexLock lock(&service_.mu);
    EXPECT_TRUE(service_.last_recording.loss_contribution());
    EXPECT_FALSE(service_.last_recording.enabled());
  }
  EXPECT_EQ(Run({"enable", "resnet", "--loss-contribution", "--sampling", "4", "--token", "s"}),
            2);
  EXPECT_THAT(err_.str(), HasSubstr("--sampling applies to operator recording"));
}

TEST_F(CliTest, BadTimeoutIsAUsageError) {
  EXPECT_EQ(Run({"jobs", "--timeout", "soon"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--timeout"));
}

TEST_F(CliTest, TailValidatesItsFlagsBeforeConnecting) {
  EXPECT_EQ(Run({"tail", "resnet", "--kinds", "rank,bogus"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unknown kind 'bogus'"));
  EXPECT_EQ(Run({"tail", "resnet", "--count", "0"}), 2);
  EXPECT_EQ(Run({"tail", "resnet", "--for", "x"}), 2);
}

TEST_F(CliTest, TailFailsFastWithoutASnapshotServer) {
  EXPECT_EQ(Run({"tail", "resnet", "--snapshot", "tcp://127.0.0.1:1", "--timeout", "0.3"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("no snapshot from tcp://127.0.0.1:1"));
}

TEST_F(CliTest, ReplayOfABadDirIsAUsageError) {
  EXPECT_EQ(Run({"replay", "/nonexistent/trainscope/log"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("/nonexistent/trainscope/log"));
  EXPECT_THAT(err_.str(), HasSubstr("segment-*.tslog"));
  EXPECT_EQ(Run({"replay", "/tmp", "--as-job", "bad name"}), 2);
  EXPECT_EQ(Run({"replay", "/tmp", "--speed", "-1"}), 2);
}

}  // namespace
}  // namespace trainscope::cli
