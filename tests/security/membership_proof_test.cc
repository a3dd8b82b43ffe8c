#include "trainscope/security/membership_proof.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "trainscope/security/job_key.h"

namespace trainscope::security {
namespace {

// The secret of job "resnet-17" under the key of job_key_test.cc.
constexpr char kSecret[] = "a7c244a6763ab328d694a18f37bdcdc7d1a55f5501e164338c055a8feb287dcf";

std::string CountingNonce() {
  std::string nonce;
  for (int i = 0; i < 32; ++i) nonce.push_back(static_cast<char>(i));
  return nonce;
}

MembershipProof::Claim ResnetRank3() {
  return {.job_id = "resnet-17",
          .rank = 3,
          .restart_count = 1,
          .agent_instance_id = 0x0123456789abcdefULL};
}

TEST(MembershipProofTest, TheProofIsHmacSha256OfNonceAndClaimUnderTheSecret) {
  // Computed apart with Python, so that an agent in another language can
  // answer: hmac.new(secret, b"trainscope membership proof v1\n" + nonce +
  // b"resnet-17\n3\n1\n81985529216486895\n", hashlib.sha256).hexdigest()
  EXPECT_EQ(
      absl::BytesToHexString(MembershipProof::Compute(kSecret, CountingNonce(), ResnetRank3())),
      "344409a0bb8370f660a871f21cfdc63635f9273033a2f5fb34a8da9ecc109343");
}

TEST(MembershipProofTest, VerifiesTheProofOfTheSecretHolder) {
  const std::string nonce = MembershipProof::NewNonce().value();
  const std::string proof = MembershipProof::Compute(kSecret, nonce, ResnetRank3());
  EXPECT_TRUE(MembershipProof::Verify(kSecret, nonce, ResnetRank3(), proof));
}

TEST(MembershipProofTest, AProofUnderAnotherKeyOrSecretFails) {
  const std::string nonce = MembershipProof::NewNonce().value();
  // The secret another key derives for the same job, and a made-up token.
  const std::string other_key_secret =
      JobKey("another key of thirty-two chars!!").JobSecret("resnet-17");
  EXPECT_FALSE(
      MembershipProof::Verify(kSecret, nonce, ResnetRank3(),
                              MembershipProof::Compute(other_key_secret, nonce, ResnetRank3())));
  EXPECT_FALSE(MembershipProof::Verify(kSecret, nonce, ResnetRank3(),
                                       MembershipProof::Compute("mine", nonce, ResnetRank3())));
  // No proof at all, or one cut short.
  const std::string proof = MembershipProof::Compute(kSecret, nonce, ResnetRank3());
  EXPECT_FALSE(MembershipProof::Verify(kSecret, nonce, ResnetRank3(), ""));
  EXPECT_FALSE(MembershipProof::Verify(kSecret, nonce, ResnetRank3(), proof.substr(0, 31)));
}

TEST(MembershipProofTest, AReplayedProofFailsUnderTheNextNonce) {
  const std::string seen_nonce = MembershipProof::NewNonce().value();
  const std::string recorded = MembershipProof::Compute(kSecret, seen_nonce, ResnetRank3());
  const std::string next_nonce = MembershipProof::NewNonce().value();
  ASSERT_NE(seen_nonce, next_nonce);
  EXPECT_FALSE(MembershipProof::Verify(kSecret, next_nonce, ResnetRank3(), recorded));
}

TEST(MembershipProofTest, AProofOpensOnlyTheJobRankAndIncarnationItClaims) {
  const std::string nonce = MembershipProof::NewNonce().value();
  const std::string proof = MembershipProof::Compute(kSecret, nonce, ResnetRank3());
  MembershipProof::Claim other_job = ResnetRank3();
  other_job.job_id = "resnet-18";
  MembershipProof::Claim other_rank = ResnetRank3();
  other_rank.rank = 0;
  MembershipProof::Claim later_restart = ResnetRank3();
  later_restart.restart_count = 2;
  MembershipProof::Claim other_instance = ResnetRank3();
  other_instance.agent_instance_id = 7;
  for (const MembershipProof::Claim& claim :
       {other_job, other_rank, later_restart, other_instance}) {
    EXPECT_FALSE(MembershipProof::Verify(kSecret, nonce, claim, proof)) << claim.job_id;
  }
}

TEST(MembershipProofTest, NothingIsProvenOverAnEmptyOrShortNonce) {
  // A challenge that is not one must not turn into a constant proof.
  for (const std::string nonce : {std::string(), std::string(16, 'x')}) {
    const std::string proof = MembershipProof::Compute(kSecret, nonce, ResnetRank3());
    EXPECT_FALSE(MembershipProof::Verify(kSecret, nonce, ResnetRank3(), proof));
  }
}

TEST(MembershipProofTest, NoncesAreFreshAndFullLength) {
  const std::string a = MembershipProof::NewNonce().value();
  const std::string b = MembershipProof::NewNonce().value();
  EXPECT_EQ(a.size(), MembershipProof::kNonceBytes);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace trainscope::security
