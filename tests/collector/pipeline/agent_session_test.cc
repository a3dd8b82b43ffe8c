// AgentSession over the real JobRegistry/JobPipeline/JobLog in a temporary
// directory; only the transport is faked.
#include "trainscope/collector/pipeline/agent_session.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/base/mutex.h"
#include "trainscope/base/notification.h"
#include "trainscope/collector/store/log_reader.h"

namespace trainscope::collector {
namespace {

using testing::BatchMessage;
using ::testing::ElementsAre;
using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::HelloMessage;
using testing::MakeBatch;
using testing::MakeHello;
using testing::ScopedTempDir;
using State = FakeAgentStream::State;

struct Agent {
  std::shared_ptr<FakeAgentStream> stream;
  std::shared_ptr<AgentSession> session;
};

class AgentSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenRegistry(); }

  void OpenRegistry() {
    JobPipelineOptions options;
    options.data_dir = dir_.path();
    options.fsync = false;
    options.use_index = false;
    options.probe_interval = absl::ZeroDuration();
    options.counters = &counters_;
    options.notice = [this](absl::string_view line) {
      base::MutexLock lock(&mu_);
      notices_.emplace_back(line);
    };
    registry_ = std::make_unique<JobRegistry>(options);
    ASSERT_TRUE(registry_->RecoverJobs().ok());
  }

  Agent Connect() {
    Agent agent{std::make_shared<FakeAgentStream>(), nullptr};
    agent.session =
        AgentSession::Create(registry_.get(), agent.stream, &budget_, &counters_, "peer-1");
    agent.session->Start();
    return agent;
  }

  // Sends the hello; returns the HelloAck, or nothing when the stream ended.
  std::optional<v1::HelloAck> SayHello(Agent& agent, v1::Hello hello) {
    agent.session->OnMessage(HelloMessage(std::move(hello)));
    EXPECT_TRUE(agent.stream->WaitUntil(
        [](const State& s) { return s.finished || s.Find(v1::Control::kHelloAck) != nullptr; }));
    const State state = agent.stream->state();
    if (const v1::Control* ack = state.Find(v1::Control::kHelloAck)) {
      // The session is active once it asks for the next message (the HelloAck
      // leaves just before): a transport delivers nothing earlier.
      EXPECT_TRUE(agent.stream->WaitForReadRequests(2));
      return ack->hello_ack();
    }
    return std::nullopt;
  }

  Agent ConnectAndHello(v1::Hello hello) {
    Agent agent = Connect();
    EXPECT_TRUE(SayHello(agent, std::move(hello)).has_value())
        << agent.stream->state().finished->ToString();
    return agent;
  }

  std::vector<std::string> Notices() {
    base::MutexLock lock(&mu_);
    return notices_;
  }

  ScopedTempDir dir_;
  base::Mutex mu_;
  std::vector<std::string> notices_ ABSL_GUARDED_BY(mu_);
  BadInputCounters counters_{absl::Seconds(10), nullptr, [](absl::string_view) {}};
  IngestBudget budget_{1ull << 30};
  std::unique_ptr<JobRegistry> registry_;
};

TEST_F(AgentSessionTest, HelloThenBatchesAreAcknowledgedInOrderOnceLogged) {
  Agent agent = Connect();
  EXPECT_EQ(agent.stream->state().read_requests, 1);  // only the hello is asked for
  std::optional<v1::HelloAck> ack = SayHello(agent, MakeHello("j", 0, 2, 11, "tok"));
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->resume_after_sequence(), 0u);
  EXPECT_TRUE(ack->job_token().empty());  // the job set its own token
  EXPECT_EQ(agent.session->state(), AgentSession::State::kActive);
  ASSERT_TRUE(agent.stream->WaitForReadRequests(2));

  for (uint64_t seq = 1; seq <= 5; ++seq) agent.session->OnMessage(BatchMessage(MakeBatch(seq, 4)));
  ASSERT_TRUE(agent.stream->WaitForAcks(5));
  EXPECT_THAT(agent.stream->state().acks(), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(agent.stream->state().sent.front().body_case(), v1::Control::kHelloAck);

  registry_->Stop();
  auto reader = LogReader::Open(dir_.path() / "jobs" / "j");
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<uint64_t> logged;
  ReadStats stats;
  ASSERT_TRUE(reader
                  ->ForEach(
                      [&](const v1::LogRecord& r) {
                        if (r.has_batch()) logged.push_back(r.batch().batch().sequence());
                        if (r.has_stream_opened()) {
                          EXPECT_TRUE(r.stream_opened().hello().job_token().empty());
                        }
                        return true;
                      },
                      &stats)
                  .ok());
  EXPECT_THAT(logged, ElementsAre(1, 2, 3, 4, 5));
}

TEST_F(AgentSessionTest, RepeatedBatchIsRejectedAndTheStreamGoesOn) {
  Agent agent = ConnectAndHello(MakeHello("j", 0, 1, 11));
  agent.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(agent.stream->WaitForAcks(1));
  agent.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(agent.stream->WaitFor(v1::Control::kReject));
  const v1::Control reject = *agent.stream->state().Find(v1::Control::kReject);
  EXPECT_EQ(reject.reject().sequence(), 1u);
  EXPECT_THAT(reject.reject().reason(), HasSubstr("duplicate batch 1"));
  EXPECT_THAT(reject.reject().reason(), HasSubstr("expected 2"));
  agent.session->OnMessage(BatchMessage(MakeBatch(2)));
  ASSERT_TRUE(agent.stream->WaitForAcks(2));
  EXPECT_FALSE(agent.stream->state().finished.has_value());
  EXPECT_EQ(counters_.count("batch.sequence"), 1u);
}

TEST_F(AgentSessionTest, GapEndsTheStreamWithFailedPrecondition) {
  Agent agent = ConnectAndHello(MakeHello("j", 0, 1, 11));
  agent.session->OnMessage(BatchMessage(MakeBatch(1)));
  agent.session->OnMessage(BatchMessage(MakeBatch(3)));
  ASSERT_TRUE(agent.stream->WaitForFinish());
  const State state = agent.stream->state();
  EXPECT_EQ(state.finished->code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(state.finished->message()),
              HasSubstr("expected batch sequence 2, got 3"));
  EXPECT_THAT(state.acks(), ElementsAre(1));  // the batch before the gap is still acknowledged
}

TEST_F(AgentSessionTest, InvalidBatchIsRejectedWithTheReasonAndItsSequenceConsumed) {
  Agent agent = ConnectAndHello(MakeHello("j", 0, 1, 11));
  v1::EventBatch bad = MakeBatch(1, 100);
  bad.mutable_duration_ns()->RemoveLast();
  agent.session->OnMessage(BatchMessage(bad));
  agent.session->OnMessage(BatchMessage(MakeBatch(2)));
  ASSERT_TRUE(agent.stream->WaitForAcks(1));
  const State state = agent.stream->state();
  const v1::Control* reject = state.Find(v1::Control::kReject);
  ASSERT_NE(reject, nullptr);
  EXPECT_EQ(reject->reject().sequence(), 1u);
  EXPECT_EQ(reject->reject().reason(),
            "batch 1: column duration_ns has 99 entries, expected 100 (one per event)");
  EXPECT_THAT(state.acks(), ElementsAre(2));
  EXPECT_EQ(counters_.count("batch.duration_ns"), 1u);
}

TEST_F(AgentSessionTest, BatchBeforeHelloEndsTheStream) {
  Agent agent = Connect();
  agent.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(agent.stream->WaitForFinish());
  const absl::Status finished = *agent.stream->state().finished;
  EXPECT_EQ(finished.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(finished.message()), HasSubstr("expected hello as the first message"));
}

TEST_F(AgentSessionTest, InvalidHelloEndsTheStreamNamingTheField) {
  Agent agent = Connect();
  v1::Hello hello = MakeHello("j", 5, 4, 11);
  EXPECT_FALSE(SayHello(agent, hello).has_value());
  EXPECT_EQ(agent.stream->state().finished->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(agent.stream->state().finished->message()), HasSubstr("hello.rank: 5"));
  EXPECT_EQ(counters_.count("hello.rank"), 1u);
}

TEST_F(AgentSessionTest, DuplicateRankIsAlreadyExists) {
  Agent first = ConnectAndHello(MakeHello("j", 3, 4, 11, "tok"));
  Agent second = Connect();
  EXPECT_FALSE(SayHello(second, MakeHello("j", 3, 4, 22, "tok")).has_value());
  const absl::Status finished = *second.stream->state().finished;
  EXPECT_EQ(finished.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(finished.message()),
              HasSubstr("job j: rank 3 is already connected (pid 1003"));
  EXPECT_THAT(std::string(finished.message()), HasSubstr("higher restart_count"));
  EXPECT_FALSE(first.stream->state().finished.has_value());
}

TEST_F(AgentSessionTest, HigherRestartCountReplacesTheOldStream) {
  Agent first = Connect();
  std::optional<v1::HelloAck> ack = SayHello(first, MakeHello("j", 3, 4, 11));
  ASSERT_TRUE(ack.has_value());
  ASSERT_FALSE(ack->job_token().empty());
  // The restarted incarnation proves membership with the job's token.
  v1::Hello newer = MakeHello("j", 3, 4, 22, ack->job_token());
  newer.set_restart_count(1);
  Agent second = ConnectAndHello(newer);
  ASSERT_TRUE(first.stream->WaitForFinish());
  EXPECT_EQ(first.stream->state().finished->code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(first.stream->state().finished->message()), HasSubstr("replaced"));
  second.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(second.stream->WaitForAcks(1));
}

// Issue 21: with a collector-generated token (no token configured), a
// process without it said Hello as rank 0 with a higher restart count,
// replaced the real stream and had its batches stored.
TEST_F(AgentSessionTest, ReplacingARankWithoutTheGeneratedTokenIsRefused) {
  Agent real = Connect();
  std::optional<v1::HelloAck> ack = SayHello(real, MakeHello("j", 0, 2, 11));
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->job_token().size(), 32u);
  // Another rank joining without a token (zero configuration) learns it too.
  Agent other = Connect();
  std::optional<v1::HelloAck> other_ack = SayHello(other, MakeHello("j", 1, 2, 12));
  ASSERT_TRUE(other_ack.has_value());
  EXPECT_EQ(other_ack->job_token(), ack->job_token());

  for (const std::string& token : {std::string(), std::string("guess")}) {
    Agent intruder = Connect();
    v1::Hello hijack = MakeHello("j", 0, 2, 66, token);
    hijack.set_restart_count(5);
    EXPECT_FALSE(SayHello(intruder, hijack).has_value());
    const absl::Status refused = *intruder.stream->state().finished;
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
    EXPECT_THAT(std::string(refused.message()), HasSubstr("job j: "));
    EXPECT_THAT(std::string(refused.message()), HasSubstr("rank 0"));
    // A reconnect of the same agent instance without the token: refused too.
    Agent same = Connect();
    EXPECT_FALSE(SayHello(same, MakeHello("j", 1, 2, 12, token)).has_value());
    EXPECT_EQ(same.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
  }
  // The real streams are untouched and still stored.
  EXPECT_FALSE(real.stream->state().finished.has_value());
  EXPECT_FALSE(other.stream->state().finished.has_value());
  real.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(real.stream->WaitForAcks(1));

  // The real agent's reconnect carries the token from its HelloAck.
  Agent again = Connect();
  EXPECT_TRUE(SayHello(again, MakeHello("j", 0, 2, 11, ack->job_token())).has_value());
  ASSERT_TRUE(real.stream->WaitForFinish());
  EXPECT_EQ(real.stream->state().finished->code(), absl::StatusCode::kAborted);
}

// A process that says Hello first squats the job id only with its own world:
// the job's ranks with another world size are refused naming both sizes.
TEST_F(AgentSessionTest, AHelloWithAnotherWorldSizeIsRefusedNamingBoth) {
  Agent first = ConnectAndHello(MakeHello("j", 0, 4, 11, "secret"));
  Agent other = Connect();
  EXPECT_FALSE(SayHello(other, MakeHello("j", 1, 2, 22, "secret")).has_value());
  const absl::Status refused = *other.stream->state().finished;
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("hello.world_size 2"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("world size 4"));
  EXPECT_FALSE(first.stream->state().finished.has_value());
}

TEST_F(AgentSessionTest, WrongOrMissingTokenIsPermissionDenied) {
  ConnectAndHello(MakeHello("j", 0, 2, 11, "secret"));
  Agent wrong = Connect();
  EXPECT_FALSE(SayHello(wrong, MakeHello("j", 1, 2, 22, "other")).has_value());
  EXPECT_EQ(wrong.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(wrong.stream->state().finished->message()),
              HasSubstr("job j: wrong job token"));
  Agent missing = Connect();
  EXPECT_FALSE(SayHello(missing, MakeHello("j", 1, 2, 33)).has_value());
  EXPECT_EQ(missing.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(missing.stream->state().finished->message()),
              HasSubstr("missing job token"));
  EXPECT_EQ(counters_.count("hello.job_token"), 2u);
  ConnectAndHello(MakeHello("j", 1, 2, 44, "secret"));
}

TEST_F(AgentSessionTest, GeneratedTokenIsReturnedAndStoredWithMode0600) {
  Agent agent = Connect();
  std::optional<v1::HelloAck> ack = SayHello(agent, MakeHello("j", 0, 2, 11));
  ASSERT_TRUE(ack.has_value());
  const std::string token = ack->job_token();
  EXPECT_EQ(token.size(), 32u);
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos);
  const std::filesystem::path file = dir_.path() / "jobs" / "j" / "token";
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  std::ifstream in(file);
  std::string stored;
  in >> stored;
  EXPECT_EQ(stored, token);
  ASSERT_FALSE(Notices().empty());
  EXPECT_THAT(Notices().back(), HasSubstr(file.string()));
  EXPECT_THAT(Notices().back(), ::testing::Not(HasSubstr(token)));  // the secret stays in the file
  // A later rank without a token joins the collector-made token; one with a wrong token cannot.
  ConnectAndHello(MakeHello("j", 1, 2, 22));
  Agent wrong = Connect();
  EXPECT_FALSE(SayHello(wrong, MakeHello("j", 1, 2, 33, "nope")).has_value());
}

TEST_F(AgentSessionTest, ResumeAfterReopeningGivesTheLastLoggedSequence) {
  {
    Agent agent = ConnectAndHello(MakeHello("j", 0, 1, 11, "tok"));
    for (uint64_t seq = 1; seq <= 3; ++seq) agent.session->OnMessage(BatchMessage(MakeBatch(seq)));
    ASSERT_TRUE(agent.stream->WaitForAcks(3));
    registry_->Stop();
  }
  OpenRegistry();  // a restarted collector over the same data directory
  Agent again = Connect();
  std::optional<v1::HelloAck> ack = SayHello(again, MakeHello("j", 0, 1, 11, "tok"));
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->resume_after_sequence(), 3u);
  again.session->OnMessage(BatchMessage(MakeBatch(4)));
  ASSERT_TRUE(again.stream->WaitForAcks(1));
  EXPECT_THAT(again.stream->state().acks(), ElementsAre(4));
  // The token set by the job survived the restart too.
  Agent wrong = Connect();
  EXPECT_FALSE(SayHello(wrong, MakeHello("j", 0, 1, 99, "other")).has_value());
  EXPECT_EQ(wrong.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(AgentSessionTest, GoodbyeIsLoggedAndTheStreamEndsCleanly) {
  Agent agent = ConnectAndHello(MakeHello("j", 0, 1, 11));
  agent.session->OnMessage(BatchMessage(MakeBatch(1)));
  v1::AgentMessage goodbye;
  goodbye.mutable_goodbye()->mutable_drops()->set_ring_full(7);
  agent.session->OnMessage(goodbye);
  agent.session->OnReadsDone("agent closed the stream");
  ASSERT_TRUE(agent.stream->WaitForFinish());
  EXPECT_TRUE(agent.stream->state().finished->ok());
  EXPECT_THAT(agent.stream->state().acks(), ElementsAre(1));  // acks go out before the end

  base::Notification got;
  v1::JobStatus status;
  (*registry_->Find("j"))->Snapshot([&](v1::JobStatus s) {
    status = std::move(s);
    got.Notify();
  });
  ASSERT_TRUE(got.WaitForNotificationWithTimeout(testing::kWait));
  ASSERT_EQ(status.ranks_size(), 1);
  EXPECT_TRUE(status.ranks(0).said_goodbye());
  EXPECT_FALSE(status.ranks(0).connected());
  EXPECT_EQ(status.ranks(0).agent_drops().ring_full(), 7u);
  EXPECT_EQ(status.summary().state(), v1::JOB_STATE_FINISHED);
}

TEST_F(AgentSessionTest, OverTheBudgetTheNextReadWaitsForTheAck) {
  IngestBudget tiny(1);  // exhausted by any batch
  Agent agent{std::make_shared<FakeAgentStream>(), nullptr};
  agent.session = AgentSession::Create(registry_.get(), agent.stream, &tiny, &counters_, "peer-1");
  agent.session->Start();
  ASSERT_TRUE(SayHello(agent, MakeHello("j", 0, 1, 11)).has_value());
  // Like a transport, deliver a batch only when a read was requested.
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    ASSERT_TRUE(agent.stream->WaitForReadRequests(static_cast<int>(seq) + 1));
    agent.session->OnMessage(BatchMessage(MakeBatch(seq)));
  }
  ASSERT_TRUE(agent.stream->WaitForAcks(5));
  const std::vector<size_t> acks_at_read = agent.stream->state().acks_at_read;
  ASSERT_GE(acks_at_read.size(), 6u);
  for (size_t read = 2; read < acks_at_read.size(); ++read) {
    EXPECT_GE(acks_at_read[read], read - 1)
        << "read " << read << " was requested before batch " << read - 1 << " was acknowledged";
  }
  EXPECT_EQ(tiny.queued_bytes(), 0u);  // everything released once durable
}

}  // namespace
}  // namespace trainscope::collector
