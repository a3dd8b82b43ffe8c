#include "trainscope/cli/log_replayer.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "trainscope/base/mutex.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/v1/agent.grpc.pb.h"

namespace trainscope::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

trainscope::v1::LogRecord Opened(uint32_t rank, uint64_t instance) {
  trainscope::v1::LogRecord record;
  trainscope::v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
  hello->set_protocol_version(kProtocolVersion);
  hello->set_job_id("train");
  hello->set_rank(rank);
  hello->set_world_size(2);
  hello->set_agent_instance_id(instance);
  return record;
}

trainscope::v1::LogRecord Batch(uint32_t rank, uint64_t instance, uint64_t sequence, int events) {
  trainscope::v1::LogRecord record;
  trainscope::v1::StreamBatch* stored = record.mutable_batch();
  stored->set_rank(rank);
  stored->set_agent_instance_id(instance);
  stored->mutable_batch()->set_sequence(sequence);
  for (int i = 0; i < events; ++i) {
    stored->mutable_batch()->add_kind(trainscope::v1::EVENT_KIND_OPERATOR);
    stored->mutable_batch()->add_start_delta_ns(10);
  }
  return record;
}

trainscope::v1::LogRecord Closed(uint32_t rank, uint64_t instance) {
  trainscope::v1::LogRecord record;
  record.mutable_stream_closed()->set_rank(rank);
  record.mutable_stream_closed()->set_agent_instance_id(instance);
  record.mutable_stream_closed()->set_goodbye(true);
  return record;
}

// An AgentService that acknowledges every batch except those whose sequence
// is in `reject`, and records what each stream sent.
class RecordingAgentService final : public trainscope::v1::AgentService::Service {
 public:
  struct Stream {
    trainscope::v1::Hello hello;
    std::vector<uint64_t> sequences;
    uint64_t events = 0;
    bool goodbye = false;
  };

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<trainscope::v1::Control,
                                                trainscope::v1::AgentMessage>* stream) override {
    trainscope::v1::AgentMessage message;
    Stream seen;
    while (stream->Read(&message)) {
      trainscope::v1::Control control;
      if (message.has_hello()) {
        seen.hello = message.hello();
        control.mutable_hello_ack()->set_job_token(
            message.hello().job_token().empty() ? "generated-token" : "");
        stream->Write(control);
      } else if (message.has_batch()) {
        const uint64_t sequence = message.batch().sequence();
        seen.sequences.push_back(sequence);
        seen.events += static_cast<uint64_t>(message.batch().kind_size());
        if (reject.count(sequence) != 0) {
          control.mutable_reject()->set_sequence(sequence);
          control.mutable_reject()->set_reason("kind: expected something else");
        } else {
          control.mutable_ack()->set_up_to_sequence(sequence);
        }
        stream->Write(control);
      } else if (message.has_goodbye()) {
        seen.goodbye = true;
        break;
      }
    }
    base::MutexLock lock(&mu);
    streams.push_back(seen);
    return grpc::Status::OK;
  }

  std::set<uint64_t> reject;
  base::Mutex mu;
  std::vector<Stream> streams ABSL_GUARDED_BY(mu);
};

class LogReplayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        ("replay-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    std::filesystem::remove_all(dir_);
  }

  // Writes `records` with the store's JobLog, as the collector would.
  void WriteLog(const std::vector<trainscope::v1::LogRecord>& records) {
    collector::RecoveryReport report;
    auto log = collector::JobLog::Open({.dir = dir_, .fsync = false}, &report);
    ASSERT_TRUE(log.ok()) << log.status();
    for (const auto& record : records) ASSERT_TRUE((*log)->Append(record).ok());
    ASSERT_TRUE((*log)->Sync().ok());
  }
  std::vector<trainscope::v1::LogRecord> TwoRanks() {
    return {Opened(0, 11),      Opened(1, 22),      Batch(0, 11, 1, 3),
            Batch(1, 22, 4, 2), Batch(0, 11, 2, 1), Batch(1, 22, 5, 5),
            Batch(0, 11, 3, 2), Closed(0, 11),      Closed(1, 22)};
  }
  std::string StartServer() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    return "127.0.0.1:" + std::to_string(port);
  }
  LogReplayer::Options Options(const std::string& collector) {
    LogReplayer::Options options;
    options.log_dir = dir_;
    options.collector = collector;
    options.timeout = absl::Seconds(5);
    return options;
  }

  std::filesystem::path dir_;
  RecordingAgentService service_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(LogReplayerTest, PlanLogReadsAStoreWrittenLog) {
  WriteLog(TwoRanks());
  uint64_t next_id = 0;
  absl::StatusOr<ReplayPlanner> plan = LogReplayer::PlanLog(
      dir_, {.as_job = "", .new_instance_id = [&] { return ++next_id; }, .job_token = ""});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->streams().size(), 2u);
  EXPECT_EQ(plan->streams()[0].rank, 0u);
  EXPECT_EQ(plan->streams()[0].batches, 3u);
  EXPECT_EQ(plan->streams()[0].events, 6u);
  EXPECT_EQ(plan->streams()[1].rank, 1u);
  EXPECT_EQ(plan->streams()[1].batches, 2u);
  EXPECT_EQ(plan->streams()[1].first_original_sequence, 4u);
  EXPECT_EQ(plan->streams()[1].hello.job_id(), "train-replay");
  EXPECT_EQ(plan->total_batches(), 5u);
}

TEST_F(LogReplayerTest, PlanLogErrorsNameThePathAndSayWhatALogDirIs) {
  absl::StatusOr<ReplayPlanner> missing = LogReplayer::PlanLog(dir_ / "nope", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(missing.status().message(), HasSubstr((dir_ / "nope").string()));
  EXPECT_THAT(missing.status().message(), HasSubstr("segment-*.tslog"));

  std::filesystem::create_directories(dir_ / "jobs" / "alpha");
  absl::StatusOr<ReplayPlanner> data_dir = LogReplayer::PlanLog(dir_, {});
  ASSERT_FALSE(data_dir.ok());
  EXPECT_THAT(data_dir.status().message(), HasSubstr("collector data dir"));
  EXPECT_THAT(data_dir.status().message(), HasSubstr("alpha"));

  absl::StatusOr<ReplayPlanner> empty = LogReplayer::PlanLog(dir_ / "jobs" / "alpha", {});
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("jobs/alpha"));

  std::ofstream(dir_ / "file") << "x";
  EXPECT_FALSE(LogReplayer::PlanLog(dir_ / "file", {}).ok());
}

TEST_F(LogReplayerTest, PlanLogRefusesALogWithoutStreams) {
  trainscope::v1::LogRecord command;
  command.mutable_command()->set_command("halt");
  WriteLog({command});
  absl::StatusOr<ReplayPlanner> plan = LogReplayer::PlanLog(dir_, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("holds no agent stream"));
}

TEST_F(LogReplayerTest, ReplaysEveryStreamRenumberedAndAcknowledged) {
  WriteLog(TwoRanks());
  LogReplayer::Options options = Options(StartServer());
  options.as_job = "again";
  absl::StatusOr<LogReplayer::Summary> summary = LogReplayer::Run(options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->ok()) << summary->Line(dir_);
  EXPECT_EQ(summary->job_id, "again");
  EXPECT_EQ(summary->streams, 2u);
  EXPECT_EQ(summary->batches_planned, 5u);
  EXPECT_EQ(summary->batches_sent, 5u);
  EXPECT_EQ(summary->batches_acked, 5u);
  EXPECT_EQ(summary->events_sent, 13u);
  EXPECT_EQ(summary->generated_token, "generated-token");
  EXPECT_THAT(summary->Line(dir_),
              HasSubstr("as job again: 2 streams, 5/5 batches sent (13 events), "
                        "5 acknowledged, 0 rejected, 0 unacknowledged"));

  base::MutexLock lock(&service_.mu);
  ASSERT_EQ(service_.streams.size(), 2u);
  std::map<uint32_t, RecordingAgentService::Stream> by_rank;
  for (const auto& stream : service_.streams) by_rank[stream.hello.rank()] = stream;
  EXPECT_THAT(by_rank[0].sequences, ElementsAre(1, 2, 3));
  EXPECT_THAT(by_rank[1].sequences, ElementsAre(1, 2));  // stored as 4, 5
  EXPECT_EQ(by_rank[1].events, 7u);
  for (auto& [rank, stream] : by_rank) {
    EXPECT_EQ(stream.hello.job_id(), "again");
    EXPECT_NE(stream.hello.agent_instance_id(), rank == 0 ? 11u : 22u);
    EXPECT_TRUE(stream.goodbye);
  }
}

TEST_F(LogReplayerTest, RejectedBatchMakesTheReplayFail) {
  WriteLog(TwoRanks());
  service_.reject = {2};
  LogReplayer::Options options = Options(StartServer());
  options.max_unsettled_per_stream = 1;  // exercise the window
  absl::StatusOr<LogReplayer::Summary> summary = LogReplayer::Run(options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_FALSE(summary->ok());
  EXPECT_EQ(summary->batches_sent, 5u);
  EXPECT_EQ(summary->batches_rejected, 2u);  // sequence 2 of both streams
  EXPECT_EQ(summary->batches_acked, 3u);
  EXPECT_EQ(summary->batches_unacked, 0u);
  ASSERT_FALSE(summary->errors.empty());
  EXPECT_THAT(summary->errors[0], HasSubstr("batch 2: kind: expected something else"));
  EXPECT_THAT(summary->Json(dir_), HasSubstr("\"batches_rejected\":2"));
  EXPECT_THAT(summary->Json(dir_), HasSubstr("\"ok\":false"));
}

TEST_F(LogReplayerTest, UnreachableCollectorFailsFastWithTheStandardMessage) {
  WriteLog(TwoRanks());
  LogReplayer::Options options = Options("127.0.0.1:1");
  options.timeout = absl::Seconds(2);
  absl::StatusOr<LogReplayer::Summary> summary = LogReplayer::Run(options);
  ASSERT_FALSE(summary.ok());
  EXPECT_TRUE(absl::IsUnavailable(summary.status()));
  EXPECT_THAT(summary.status().message(), HasSubstr("cannot reach the collector at 127.0.0.1:1"));
}

TEST_F(LogReplayerTest, StopFlagInterrupts) {
  WriteLog(TwoRanks());
  std::atomic<bool> stop{true};
  LogReplayer::Options options = Options(StartServer());
  options.stop = &stop;
  absl::StatusOr<LogReplayer::Summary> summary = LogReplayer::Run(options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->interrupted);
  EXPECT_FALSE(summary->ok());
}

}  // namespace
}  // namespace trainscope::cli
