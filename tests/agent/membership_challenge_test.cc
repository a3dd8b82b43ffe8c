// The agent's side of the membership challenge (protocol 2, issue 21): the
// Hello carries no secret, the proof answers the collector's nonce, and to a
// collector without a job key only the token that collector issued goes back.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/security/membership_proof.h"

namespace trainscope::agent {
namespace {

constexpr char kSecret[] = "4f1c6d0e9b8a7f6e5d4c3b2a19080706f5e4d3c2b1a0918273645546372819ab";

AgentOptions ChallengedOptions() {
  AgentOptions options;
  options.collector_address = "127.0.0.1:1";
  options.job_id = "challenged";
  options.job_token = kSecret;
  options.rank = 2;
  options.world_size = 4;
  options.restart_count = 3;
  options.log_to_stderr = false;
  options.reconnect_max = absl::Milliseconds(200);
  return options;
}

// An agent of ChallengedOptions() against `collector`, which answers each
// Hello with a challenge carrying `nonce` (nullopt: no challenge, a HelloAck
// or the collector's refusal).
std::unique_ptr<Agent> StartAgainst(const std::shared_ptr<FakeCollector>& collector,
                                    std::optional<std::string> nonce) {
  {
    base::MutexLock lock(&collector->mu);
    collector->challenge_nonce = std::move(nonce);
  }
  auto agent =
      Agent::StartWithTransport(ChallengedOptions(), std::make_unique<FakeTransport>(collector));
  EXPECT_TRUE(agent.ok()) << agent.status();
  return agent.ok() ? *std::move(agent) : nullptr;
}

// The MembershipProofs the agent wrote, in order; `instance`: its Hello's id.
std::vector<v1::MembershipProof> Proofs(FakeCollector& collector, uint64_t* instance = nullptr) {
  std::vector<v1::MembershipProof> proofs;
  for (const v1::AgentMessage& message : collector.Messages()) {
    if (message.has_hello() && instance != nullptr) *instance = message.hello().agent_instance_id();
    if (message.has_membership_proof()) proofs.push_back(message.membership_proof());
  }
  return proofs;
}

// Whether `secret` appears anywhere in what the agent wrote.
bool SecretOnTheWire(FakeCollector& collector, const std::string& secret) {
  for (const v1::AgentMessage& message : collector.Messages()) {
    if (message.SerializeAsString().find(secret) != std::string::npos) return true;
  }
  return false;
}

TEST(MembershipChallengeTest, TheAgentAnswersTheNonceAndNeverSendsItsSecret) {
  auto collector = std::make_shared<FakeCollector>();
  const std::string nonce = security::MembershipProof::NewNonce().value();
  std::unique_ptr<Agent> agent = StartAgainst(collector, nonce);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitFor([&] { return agent->stats().connected; }));

  const std::vector<v1::AgentMessage> written = collector->Messages();
  ASSERT_GE(written.size(), 2u);
  ASSERT_TRUE(written[0].has_hello());
  const v1::Hello& hello = written[0].hello();
  EXPECT_EQ(hello.protocol_version(), kProtocolVersion);
  EXPECT_GE(hello.protocol_version(), kMembershipChallengeVersion);
  EXPECT_EQ(hello.job_token(), "");
  ASSERT_TRUE(written[1].has_membership_proof());
  const security::MembershipProof::Claim claim{"challenged", 2, 3, hello.agent_instance_id()};
  EXPECT_TRUE(security::MembershipProof::Verify(kSecret, nonce, claim,
                                                written[1].membership_proof().proof()));
  EXPECT_EQ(written[1].membership_proof().issued_token(), "");
  EXPECT_FALSE(SecretOnTheWire(*collector, kSecret));
  agent->Shutdown(absl::Seconds(5));
}

TEST(MembershipChallengeTest, EachStreamAnswersItsOwnNonce) {
  auto collector = std::make_shared<FakeCollector>();
  const std::string first = security::MembershipProof::NewNonce().value();
  const std::string second = security::MembershipProof::NewNonce().value();
  std::unique_ptr<Agent> agent = StartAgainst(collector, first);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitFor([&] { return agent->stats().connected; }));
  {
    base::MutexLock lock(&collector->mu);
    collector->challenge_nonce = second;
  }
  collector->Break();
  ASSERT_TRUE(WaitFor([&] { return Proofs(*collector).size() >= 2 && agent->stats().connected; }));
  uint64_t instance = 0;
  const std::vector<v1::MembershipProof> proofs = Proofs(*collector, &instance);
  const security::MembershipProof::Claim claim{"challenged", 2, 3, instance};
  EXPECT_TRUE(security::MembershipProof::Verify(kSecret, first, claim, proofs[0].proof()));
  EXPECT_TRUE(security::MembershipProof::Verify(kSecret, second, claim, proofs[1].proof()));
  // The first stream's proof is no answer to the second's nonce.
  EXPECT_FALSE(security::MembershipProof::Verify(kSecret, second, claim, proofs[0].proof()));
  agent->Shutdown(absl::Seconds(5));
}

TEST(MembershipChallengeTest, AKeylessCollectorGetsBackOnlyTheTokenItIssued) {
  auto collector = std::make_shared<FakeCollector>();
  {
    base::MutexLock lock(&collector->mu);
    collector->ack_token = "issued-by-the-collector";
  }
  // An empty nonce: no job key (--allow-unauthenticated-jobs).
  std::unique_ptr<Agent> agent = StartAgainst(collector, std::string());
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitFor([&] { return agent->stats().connected; }));
  collector->Break();  // the reconnect presents what the collector issued
  ASSERT_TRUE(WaitFor([&] { return Proofs(*collector).size() >= 2 && agent->stats().connected; }));
  const std::vector<v1::MembershipProof> proofs = Proofs(*collector);
  EXPECT_EQ(proofs[0].issued_token(), "");  // its given secret stays home
  EXPECT_EQ(proofs[0].proof(), "");
  EXPECT_EQ(proofs[1].issued_token(), "issued-by-the-collector");
  EXPECT_FALSE(SecretOnTheWire(*collector, kSecret));
  agent->Shutdown(absl::Seconds(5));
}

TEST(MembershipChallengeTest, ACollectorOfProtocolOneNeverGetsTheSecret) {
  // A collector of protocol 1 wants the secret in the Hello and refuses.
  auto collector = std::make_shared<FakeCollector>();
  {
    base::MutexLock lock(&collector->mu);
    collector->refuse_hello = absl::PermissionDeniedError("rank 2 presented no job secret");
  }
  std::unique_ptr<Agent> agent = StartAgainst(collector, std::nullopt);
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitFor([&] { return !agent->stats().refusal.empty(); }));
  EXPECT_THAT(agent->stats().refusal, ::testing::HasSubstr("presented no job secret"));
  EXPECT_FALSE(SecretOnTheWire(*collector, kSecret));
  agent->Shutdown(absl::Seconds(5));
}

}  // namespace
}  // namespace trainscope::agent
