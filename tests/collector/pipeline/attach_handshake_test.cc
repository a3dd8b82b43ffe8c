#include "trainscope/collector/pipeline/attach_handshake.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::collector {
namespace {

using testing::FakeAgentStream;
using ::testing::HasSubstr;
using testing::MakeHello;
using testing::ScopedTempDir;

constexpr int64_t kNow = 1'700'000'000'000'000'000;

class AttachHandshakeTest : public ::testing::Test {
 protected:
  explicit AttachHandshakeTest(JobToken token = JobToken{})
      : tokens_("j", dir_.path(), std::move(token)),
        commands_("j", {.steps = 2, .lead_ns = 1'000'000'000}, &tokens_),
        handshake_("j",
                   {.max_message_bytes = 4u << 20,
                    .notice = [this](absl::string_view line) { notices_.emplace_back(line); }},
                   &streams_, &tokens_, &commands_) {}

  // Admits and opens `hello` as the pipeline does (without the log).
  absl::StatusOr<AttachHandshake::Joined> Join(const v1::Hello& hello,
                                               std::shared_ptr<FakeAgentStream> stream,
                                               const JobLogState& log = {}) {
    absl::StatusOr<AttachHandshake::Admission> admitted = handshake_.Admit(hello);
    if (!admitted.ok()) return admitted.status();
    if (admitted->replaced) {
      streams_.Close(admitted->replaced->connection_id, false, "", false, kNow);
    }
    return handshake_.Open(hello, *admitted, std::move(stream), "peer", log, kNow);
  }

  v1::JobSummary Summary() const {
    v1::JobSummary summary;
    streams_.FillSummary(&summary);
    return summary;
  }

  // Runs `command` through the runner as the pipeline does once it is durable.
  void Command(JobCommand command) {
    commands_.Commit(commands_.Prepare(command, {.any_step = true, .highest_step = 10}));
  }

  ScopedTempDir dir_;
  AgentStreamTable streams_{"j"};
  JobTokenKeeper tokens_;
  CommandRunner commands_;
  std::vector<std::string> notices_;
  AttachHandshake handshake_;
};

TEST_F(AttachHandshakeTest, AnotherWorldSizeIsRefusedAndCountedInTheSummary) {
  ASSERT_TRUE(Join(MakeHello("j", 0, 4, 11), std::make_shared<FakeAgentStream>()).ok());
  absl::StatusOr<AttachHandshake::Admission> other = handshake_.Admit(MakeHello("j", 1, 8, 22));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(other.status().message()),
              HasSubstr("hello.world_size 8 does not match the job's world size 4"));
  EXPECT_EQ(Summary().hellos_refused(), 1u);
  EXPECT_THAT(Summary().last_hello_refusal(), HasSubstr("hello.world_size 8"));
}

TEST_F(AttachHandshakeTest, TheFirstRankGetsAGeneratedTokenAndARankSeenBeforeMustPresentIt) {
  auto first_stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachHandshake::Admission> first = handshake_.Admit(MakeHello("j", 0, 2, 11));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->ack_token.size(), 32u);
  EXPECT_FALSE(first->replaced.has_value());
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_THAT(notices_[0], HasSubstr("job j attached without a token; generated one in"));
  EXPECT_THAT(notices_[0], HasSubstr("also sent to rank 0"));
  handshake_.Open(MakeHello("j", 0, 2, 11), *first, first_stream, "peer", {}, kNow);
  const std::string token = first->ack_token;

  // A restarted incarnation of rank 0 without the token: refused before it
  // can learn or replace anything; the live stream goes on.
  v1::Hello takeover = MakeHello("j", 0, 2, 99);
  takeover.set_restart_count(1);
  absl::StatusOr<AttachHandshake::Admission> refused = handshake_.Admit(takeover);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(BadInputCause(refused.status()), "hello.job_token");
  EXPECT_FALSE(first_stream->state().finished.has_value());
  EXPECT_EQ(Summary().hellos_refused(), 1u);

  // With the token it replaces the live stream, which is told why.
  takeover.set_job_token(token);
  absl::StatusOr<AttachHandshake::Admission> replacing = handshake_.Admit(takeover);
  ASSERT_TRUE(replacing.ok()) << replacing.status();
  EXPECT_EQ(replacing->ack_token, "");  // it presented the token: nothing to send
  ASSERT_TRUE(replacing->replaced.has_value());
  EXPECT_THAT(replacing->replaced->why, HasSubstr("restart_count 1 > 0"));
  ASSERT_TRUE(first_stream->state().finished.has_value());
  EXPECT_EQ(first_stream->state().finished->code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(first_stream->state().finished->message()),
              HasSubstr("job j: rank 0: this stream was replaced: a new incarnation"));

  // Another rank's first stream still joins without it (zero configuration).
  absl::StatusOr<AttachHandshake::Admission> other = handshake_.Admit(MakeHello("j", 1, 2, 12));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->ack_token, token);
}

TEST_F(AttachHandshakeTest, ARankWhoseFirstStreamEndedBeforeItsAckComesBackWithoutTheToken) {
  // Its agent never had the HelloAck, so never the generated token (a hello
  // timeout under load): it has delivered nothing and is not live.
  absl::StatusOr<AttachHandshake::Joined> first =
      Join(MakeHello("j", 0, 1, 11), std::make_shared<FakeAgentStream>());
  ASSERT_TRUE(first.ok());
  streams_.Close(first->connection_id, false, "", false, kNow);
  absl::StatusOr<AttachHandshake::Admission> again = handshake_.Admit(MakeHello("j", 0, 1, 12));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ack_token.size(), 32u);

  // Once it delivered a batch it must prove membership, even when gone.
  absl::StatusOr<AttachHandshake::Joined> second =
      Join(MakeHello("j", 0, 1, 12), std::make_shared<FakeAgentStream>());
  ASSERT_TRUE(second.ok());
  streams_.OnBatch(0, testing::MakeBatch(1), false, 100, kNow);
  streams_.Close(second->connection_id, false, "", false, kNow);
  EXPECT_EQ(handshake_.Admit(MakeHello("j", 0, 1, 13)).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(AttachHandshakeTest, ASecondLiveStreamOfARankIsRefused) {
  ASSERT_TRUE(Join(MakeHello("j", 0, 2, 11), std::make_shared<FakeAgentStream>()).ok());
  const std::string token = ReadJobToken(dir_.path())->value;
  absl::StatusOr<AttachHandshake::Admission> duplicate =
      handshake_.Admit(MakeHello("j", 0, 2, 22, token));
  EXPECT_EQ(duplicate.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(BadInputCause(duplicate.status()), "hello.rank");
  EXPECT_EQ(Summary().hellos_refused(), 1u);
}

TEST_F(AttachHandshakeTest, TheOpeningIsLoggedWithoutTheToken) {
  const v1::LogRecord record =
      AttachHandshake::OpenedRecord(MakeHello("j", 3, 4, 11, "secret-token"));
  ASSERT_TRUE(record.has_stream_opened());
  EXPECT_EQ(record.stream_opened().hello().rank(), 3u);
  EXPECT_EQ(record.stream_opened().hello().job_token(), "");
  EXPECT_EQ(record.SerializeAsString().find("secret-token"), std::string::npos);
}

TEST_F(AttachHandshakeTest, AStreamResumesAfterTheLastBatchTheLogHoldsOfItsInstance) {
  JobLogState log;
  log.streams[StreamKey{0, 11}].last_sequence = 7;
  absl::StatusOr<AttachHandshake::Joined> joined =
      Join(MakeHello("j", 0, 2, 11), std::make_shared<FakeAgentStream>(), log);
  ASSERT_TRUE(joined.ok());
  EXPECT_TRUE(joined->first_rank);
  EXPECT_EQ(joined->resume_after_sequence, 7u);
  EXPECT_EQ(joined->key.rank, 0u);
  EXPECT_EQ(joined->key.agent_instance_id, 11u);
  // Another instance starts from the beginning; the job is not new any more.
  absl::StatusOr<AttachHandshake::Joined> other =
      Join(MakeHello("j", 1, 2, 12), std::make_shared<FakeAgentStream>(), log);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->first_rank);
  EXPECT_EQ(other->resume_after_sequence, 0u);
}

TEST_F(AttachHandshakeTest, TheHelloAckSaysWhatTheCommandsAndTheHelloDecided) {
  auto stream = std::make_shared<FakeAgentStream>();
  v1::Hello hello = MakeHello("j", 0, 1, 11);
  hello.set_recording(true);
  hello.set_protocol_version(kProtocolVersion + 5);  // a newer agent
  absl::StatusOr<AttachHandshake::Joined> joined = Join(hello, stream);
  ASSERT_TRUE(joined.ok());
  // Nothing is sent before the opening is durable.
  EXPECT_TRUE(stream->state().sent.empty());

  // Commands since the hello win over what the agent said.
  JobCommand off;
  off.kind = JobCommand::Kind::kDisableRecording;
  Command(off);
  JobCommand loss;
  loss.kind = JobCommand::Kind::kEnableLossContribution;
  Command(loss);
  absl::StatusOr<AttachResult> result = handshake_.Acknowledge(*joined);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->connection_id, joined->connection_id);
  const FakeAgentStream::State sent = stream->state();
  ASSERT_EQ(sent.sent.size(), 1u);
  ASSERT_TRUE(sent.sent[0].has_hello_ack());
  const v1::HelloAck& ack = sent.sent[0].hello_ack();
  EXPECT_EQ(ack.job_token().size(), 32u);
  EXPECT_FALSE(ack.recording());
  EXPECT_TRUE(ack.has_loss_contribution());
  EXPECT_TRUE(ack.loss_contribution());
  EXPECT_EQ(ack.max_message_bytes(), 4u << 20);
  EXPECT_EQ(ack.protocol_version(), kProtocolVersion);
  // From now on the stream gets the job's control messages.
  EXPECT_EQ(streams_.AckedCount(), 1u);
}

TEST_F(AttachHandshakeTest, ARankJoiningAHaltedJobGetsTheHaltRightAfterItsHelloAck) {
  JobCommand halt;
  halt.kind = JobCommand::Kind::kHalt;
  halt.reason = "diverged";
  Command(halt);
  auto stream = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachHandshake::Joined> joined = Join(MakeHello("j", 0, 1, 11), stream);
  ASSERT_TRUE(joined.ok());
  ASSERT_TRUE(handshake_.Acknowledge(*joined).ok());
  ASSERT_EQ(stream->state().sent.size(), 2u);
  EXPECT_TRUE(stream->state().sent[0].has_hello_ack());
  ASSERT_TRUE(stream->state().sent[1].has_halt());
  EXPECT_EQ(stream->state().sent[1].halt().halt_at_step(), 12u);
}

TEST_F(AttachHandshakeTest, AStreamReplacedBeforeItsAckGetsNone) {
  auto first = std::make_shared<FakeAgentStream>();
  absl::StatusOr<AttachHandshake::Joined> joined = Join(MakeHello("j", 0, 1, 11), first);
  ASSERT_TRUE(joined.ok());
  // The same agent reconnects before the first opening was durable.
  const std::string token = ReadJobToken(dir_.path())->value;
  ASSERT_TRUE(Join(MakeHello("j", 0, 1, 11, token), std::make_shared<FakeAgentStream>()).ok());
  absl::StatusOr<AttachResult> late = handshake_.Acknowledge(*joined);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(late.status().message()),
              HasSubstr("the stream was replaced before it was acknowledged"));
  EXPECT_EQ(first->state().Find(v1::Control::kHelloAck), nullptr);
}

TEST_F(AttachHandshakeTest, AHellosHaltPolicyAppliesUnlessTheJobSetItsOwn) {
  v1::Hello hello = MakeHello("j", 3, 4, 11);
  EXPECT_FALSE(AttachHandshake::PolicyCommand(hello, false).has_value());  // none brought
  hello.mutable_halt_policy()->set_enabled(true);
  std::optional<JobCommand> command = AttachHandshake::PolicyCommand(hello, false);
  ASSERT_TRUE(command.has_value());
  EXPECT_EQ(command->kind, JobCommand::Kind::kSetHaltPolicy);
  EXPECT_TRUE(command->halt_policy.enabled());
  EXPECT_EQ(command->requested_by, "rank 3's hello");
  EXPECT_FALSE(AttachHandshake::PolicyCommand(hello, /*policy_from_job=*/true).has_value());
}

TEST_F(AttachHandshakeTest, NewStreamsAreRefusedOnceTheJobIsEnding) {
  EXPECT_FALSE(handshake_.ending().has_value());
  handshake_.RefuseNewStreams(absl::UnavailableError("shutting down"));
  ASSERT_TRUE(handshake_.ending().has_value());
  EXPECT_EQ(handshake_.ending()->code(), absl::StatusCode::kUnavailable);
}

// A job whose first rank brought its own token admits only ranks that have it.
class AttachHandshakeWithTokenTest : public AttachHandshakeTest {
 protected:
  AttachHandshakeWithTokenTest() : AttachHandshakeTest(JobToken{"secret", false}) {}
};

TEST_F(AttachHandshakeWithTokenTest, EveryRankMustPresentTheJobsToken) {
  absl::StatusOr<AttachHandshake::Admission> without = handshake_.Admit(MakeHello("j", 0, 2, 11));
  EXPECT_EQ(without.status().code(), absl::StatusCode::kPermissionDenied);
  absl::StatusOr<AttachHandshake::Admission> with =
      handshake_.Admit(MakeHello("j", 0, 2, 11, "secret"));
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->ack_token, "");
  EXPECT_TRUE(notices_.empty());  // nothing generated
}

}  // namespace
}  // namespace trainscope::collector
