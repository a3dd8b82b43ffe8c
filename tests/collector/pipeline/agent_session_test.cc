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
#include "trainscope/proto/protocol.h"
#include "trainscope/security/membership_proof.h"

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

  Agent Connect(const std::string& peer = "peer-1") {
    Agent agent{std::make_shared<FakeAgentStream>(), nullptr};
    agent.session = AgentSession::Create(registry_.get(), agent.stream, &budget_, &counters_, peer,
                                         session_options_);
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
  AgentSessionOptions session_options_;
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

// Protocol 2 (issue 21): membership is proven by answering a nonce, so the
// secret never travels; a collector with a job key (the default).
class AgentSessionMembershipTest : public AgentSessionTest {
 protected:
  static constexpr char kKey[] = "0123456789abcdef0123456789abcdef";

  void SetUp() override {
    AgentSessionTest::SetUp();
    session_options_.job_key = std::make_shared<const security::JobKey>(kKey);
  }

  static v1::Hello HelloV2(const std::string& job, uint32_t rank, uint32_t world,
                           uint64_t instance) {
    v1::Hello hello = MakeHello(job, rank, world, instance);
    hello.set_protocol_version(kProtocolVersion);
    hello.set_min_protocol_version(kMinProtocolVersion);
    return hello;
  }

  // Sends the Hello; returns the challenge's nonce (nullopt: no challenge).
  static std::optional<std::string> Challenged(Agent& agent, v1::Hello hello) {
    agent.session->OnMessage(HelloMessage(std::move(hello)));
    EXPECT_TRUE(agent.stream->WaitUntil([](const State& s) {
      return s.finished || s.Find(v1::Control::kMembershipChallenge) != nullptr;
    }));
    const State state = agent.stream->state();
    const v1::Control* challenge = state.Find(v1::Control::kMembershipChallenge);
    if (challenge == nullptr) return std::nullopt;
    EXPECT_EQ(state.Find(v1::Control::kHelloAck), nullptr);  // nothing before the proof
    return challenge->membership_challenge().nonce();
  }

  // Answers with `proof`; true when the HelloAck came.
  static bool Prove(Agent& agent, const std::string& proof) {
    v1::AgentMessage message;
    message.mutable_membership_proof()->set_proof(proof);
    agent.session->OnMessage(std::move(message));
    EXPECT_TRUE(agent.stream->WaitUntil(
        [](const State& s) { return s.finished || s.Find(v1::Control::kHelloAck) != nullptr; }));
    if (agent.stream->state().Find(v1::Control::kHelloAck) == nullptr) return false;
    // Active once it asks for the next message (reads: hello, proof, next).
    EXPECT_TRUE(agent.stream->WaitForReadRequests(3));
    return true;
  }

  static std::string ProofFor(const std::string& secret, const std::string& nonce,
                              const v1::Hello& hello) {
    return security::MembershipProof::Compute(
        secret, nonce,
        {hello.job_id(), hello.rank(), hello.restart_count(), hello.agent_instance_id()});
  }

  std::string Secret(const std::string& job) { return security::JobKey(kKey).JobSecret(job); }

  v1::JobSummary Summary(const std::string& job) {
    base::Notification got;
    v1::JobStatus status;
    (*registry_->Find(job))->Snapshot([&](v1::JobStatus s) {
      status = std::move(s);
      got.Notify();
    });
    EXPECT_TRUE(got.WaitForNotificationWithTimeout(testing::kWait));
    return status.summary();
  }
};

TEST_F(AgentSessionMembershipTest, TheSecretHoldersProofOfTheNonceJoins) {
  Agent agent = Connect();
  const v1::Hello hello = HelloV2("j", 0, 2, 11);
  std::optional<std::string> nonce = Challenged(agent, hello);
  ASSERT_TRUE(nonce.has_value());
  EXPECT_EQ(nonce->size(), security::MembershipProof::kNonceBytes);
  ASSERT_TRUE(Prove(agent, ProofFor(Secret("j"), *nonce, hello)));
  agent.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(agent.stream->WaitForAcks(1));
  // The job's token is its secret, as with protocol 1: commands carrying the
  // secret (the CLI finds it like an agent) are authorised.
  std::string token;
  std::ifstream(dir_.path() / "jobs" / "j" / "token") >> token;
  EXPECT_EQ(token, Secret("j"));
}

TEST_F(AgentSessionMembershipTest, WrongKeyNoProofOrAnotherClaimIsRefusedAndCreatesNoJob) {
  const std::string other_key_secret =
      security::JobKey("another key of thirty-two chars!!").JobSecret("j");
  struct Attempt {
    std::string what;
    std::function<std::string(const std::string& nonce, const v1::Hello& hello)> proof;
    std::string said;
  };
  const std::vector<Attempt> attempts = {
      {"another key", [&](auto& n, auto& h) { return ProofFor(other_key_secret, n, h); },
       "not the job's secret"},
      {"no proof", [](auto&, auto&) { return std::string(); }, "presented no job secret"},
      {"a proof for rank 1",
       [&](auto& n, auto& h) {
         v1::Hello other = h;
         other.set_rank(1);
         return ProofFor(Secret("j"), n, other);
       },
       "not the job's secret"},
      {"a proof for another job", [&](auto& n, auto& h) { return ProofFor(Secret("k"), n, h); },
       "not the job's secret"},
  };
  for (const Attempt& attempt : attempts) {
    Agent intruder = Connect("ipv4:127.0.0.1:4242");
    const v1::Hello hello = HelloV2("j", 0, 2, 66);
    std::optional<std::string> nonce = Challenged(intruder, hello);
    ASSERT_TRUE(nonce.has_value()) << attempt.what;
    EXPECT_FALSE(Prove(intruder, attempt.proof(*nonce, hello))) << attempt.what;
    const absl::Status refused = *intruder.stream->state().finished;
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << attempt.what << refused;
    EXPECT_THAT(std::string(refused.message()), HasSubstr(attempt.said)) << attempt.what;
    EXPECT_THAT(std::string(refused.message()), HasSubstr("job j: rank 0"));
  }
  EXPECT_FALSE(registry_->Find("j").ok());  // the job id stays free
  EXPECT_EQ(counters_.count("membership_proof.proof"), attempts.size());

  // The real job, created later, shows every attempt and where the last came from.
  Agent real = Connect("ipv4:127.0.0.1:5000");
  const v1::Hello hello = HelloV2("j", 0, 2, 11);
  std::optional<std::string> nonce = Challenged(real, hello);
  ASSERT_TRUE(nonce.has_value());
  ASSERT_TRUE(Prove(real, ProofFor(Secret("j"), *nonce, hello)));
  const v1::JobSummary summary = Summary("j");
  EXPECT_EQ(summary.hellos_refused(), attempts.size());
  EXPECT_THAT(summary.last_hello_refusal(), HasSubstr("not the job's secret"));
  EXPECT_THAT(summary.last_hello_refusal_from(), HasSubstr("peer ipv4:127.0.0.1:4242"));
  EXPECT_THAT(summary.last_hello_refusal_from(), HasSubstr("host 'testhost'"));
}

TEST_F(AgentSessionMembershipTest, AReplayedProofFailsUnderTheNextStreamsNonce) {
  Agent real = Connect();
  const v1::Hello hello = HelloV2("j", 0, 2, 11);
  std::optional<std::string> first = Challenged(real, hello);
  ASSERT_TRUE(first.has_value());
  const std::string recorded = ProofFor(Secret("j"), *first, hello);
  ASSERT_TRUE(Prove(real, recorded));

  // Someone who read the stream sends the same Hello and the same proof.
  Agent replay = Connect("ipv4:127.0.0.1:4343");
  std::optional<std::string> second = Challenged(replay, hello);
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*second, *first);
  EXPECT_FALSE(Prove(replay, recorded));
  EXPECT_EQ(replay.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
  // The real stream is not replaced, and the attempt shows in its job.
  EXPECT_FALSE(real.stream->state().finished.has_value());
  real.session->OnMessage(BatchMessage(MakeBatch(1)));
  ASSERT_TRUE(real.stream->WaitForAcks(1));
  const v1::JobSummary summary = Summary("j");
  EXPECT_EQ(summary.hellos_refused(), 1u);
  EXPECT_THAT(summary.last_hello_refusal_from(), HasSubstr("ipv4:127.0.0.1:4343"));
}

TEST_F(AgentSessionMembershipTest, AProtocolOneHelloStillPresentsTheSecretInClear) {
  // An agent from before the challenge: admitted with the secret, as before.
  Agent old_agent = Connect();
  std::optional<v1::HelloAck> ack = SayHello(old_agent, MakeHello("j", 0, 2, 11, Secret("j")));
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->protocol_version(), 1u);
  EXPECT_EQ(old_agent.stream->state().Find(v1::Control::kMembershipChallenge), nullptr);
  Agent wrong = Connect();
  EXPECT_FALSE(SayHello(wrong, MakeHello("j", 1, 2, 22, "made-up")).has_value());
  EXPECT_EQ(wrong.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(wrong.stream->state().finished->message()),
              HasSubstr("presented a token that is not the job's secret"));
  EXPECT_EQ(Summary("j").hellos_refused(), 1u);
}

TEST_F(AgentSessionMembershipTest, AProtocolTwoHelloWithATokenOrAnUnaskedProofIsRefused) {
  Agent clear = Connect();
  v1::Hello hello = HelloV2("j", 0, 2, 11);
  hello.set_job_token(Secret("j"));
  clear.session->OnMessage(HelloMessage(hello));
  ASSERT_TRUE(clear.stream->WaitForFinish());
  EXPECT_EQ(clear.stream->state().finished->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(clear.stream->state().finished->message()),
              HasSubstr("must not carry a token"));

  Agent early = Connect();
  v1::AgentMessage proof;
  proof.mutable_membership_proof()->set_proof("x");
  early.session->OnMessage(proof);
  ASSERT_TRUE(early.stream->WaitForFinish());
  EXPECT_EQ(early.stream->state().finished->code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(early.stream->state().finished->message()), HasSubstr("not challenged"));
}

TEST_F(AgentSessionTest, WithoutAJobKeyTheChallengeAsksForTheIssuedToken) {
  // --allow-unauthenticated-jobs: an empty nonce; the token keeper judges.
  auto hello_v2 = [](uint32_t rank, uint64_t instance) {
    v1::Hello hello = MakeHello("j", rank, 2, instance);
    hello.set_protocol_version(kProtocolVersion);
    return hello;
  };
  auto join = [&](Agent& agent, const v1::Hello& hello, const std::string& issued) {
    agent.session->OnMessage(HelloMessage(hello));
    EXPECT_TRUE(agent.stream->WaitFor(v1::Control::kMembershipChallenge));
    const State challenged = agent.stream->state();
    EXPECT_EQ(challenged.Find(v1::Control::kMembershipChallenge)->membership_challenge().nonce(),
              "");
    v1::AgentMessage proof;
    proof.mutable_membership_proof()->set_issued_token(issued);
    agent.session->OnMessage(proof);
    EXPECT_TRUE(agent.stream->WaitUntil(
        [](const State& s) { return s.finished || s.Find(v1::Control::kHelloAck) != nullptr; }));
    const State state = agent.stream->state();
    const v1::Control* ack = state.Find(v1::Control::kHelloAck);
    return ack == nullptr ? std::optional<v1::HelloAck>() : ack->hello_ack();
  };
  Agent first = Connect();
  std::optional<v1::HelloAck> ack = join(first, hello_v2(0, 11), "");
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->job_token().size(), 32u);  // generated, as for a tokenless Hello
  // Rank 0 again (a takeover) without the issued token: refused; with it: admitted.
  Agent intruder = Connect();
  v1::Hello takeover = hello_v2(0, 66);
  takeover.set_restart_count(3);
  EXPECT_FALSE(join(intruder, takeover, "").has_value());
  EXPECT_EQ(intruder.stream->state().finished->code(), absl::StatusCode::kPermissionDenied);
  Agent again = Connect();
  EXPECT_TRUE(join(again, hello_v2(0, 11), ack->job_token()).has_value());
}

}  // namespace
}  // namespace trainscope::collector
