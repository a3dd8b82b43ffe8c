#include "trainscope/collector/pipeline/job_token_keeper.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;
using testing::ScopedTempDir;

TEST(JobTokenKeeperTest, TheFirstRankFixesTheTokenLaterRanksMustMatch) {
  ScopedTempDir dir;
  JobTokenKeeper keeper("j", dir.path(), JobToken{});
  auto first = keeper.AdmitRank("secret", false, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->ack_token, "");  // nothing generated
  EXPECT_FALSE(first->generated);
  EXPECT_EQ(ReadJobToken(dir.path())->value, "secret");

  EXPECT_TRUE(keeper.AdmitRank("secret", false, 1).ok());
  EXPECT_TRUE(keeper.AdmitRank("secret", true, 0).ok());  // a reconnect with the token
  auto wrong = keeper.AdmitRank("guess", false, 2);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(BadInputCause(wrong.status()), "hello.job_token");
  auto missing = keeper.AdmitRank("", false, 2);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(missing.status().message(), HasSubstr("missing job token"));
  EXPECT_THAT(missing.status().message(), HasSubstr("TRAINSCOPE_TOKEN"));
}

TEST(JobTokenKeeperTest, AJobWithoutTokenGetsOneGeneratedAndSentToEachNewRank) {
  ScopedTempDir dir;
  JobTokenKeeper keeper("j", dir.path(), JobToken{});
  auto generated = keeper.AdmitRank("", false, 0);
  ASSERT_TRUE(generated.ok());
  EXPECT_TRUE(generated->generated);
  EXPECT_EQ(generated->ack_token.size(), 32u);
  EXPECT_EQ(ReadJobToken(dir.path())->value, generated->ack_token);
  // Zero configuration: another rank's first stream is admitted and learns
  // the token, so its own reconnects can prove membership.
  auto second = keeper.AdmitRank("", false, 1);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->generated);
  EXPECT_EQ(second->ack_token, generated->ack_token);
  auto with_token = keeper.AdmitRank(generated->ack_token, true, 0);
  ASSERT_TRUE(with_token.ok());
  EXPECT_EQ(with_token->ack_token, "");
  EXPECT_TRUE(keeper.AuthorizeCommand(generated->ack_token).ok());
  EXPECT_EQ(keeper.AuthorizeCommand("").code(), absl::StatusCode::kPermissionDenied);
}

TEST(JobTokenKeeperTest, ARankSeenBeforeMustProveMembershipEvenWithAGeneratedToken) {
  ScopedTempDir dir;
  JobTokenKeeper keeper("job-x", dir.path(), JobToken{});
  ASSERT_TRUE(keeper.AdmitRank("", false, 0).ok());
  auto takeover = keeper.AdmitRank("", /*rank_seen=*/true, 0);
  EXPECT_EQ(takeover.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(BadInputCause(takeover.status()), "hello.job_token");
  EXPECT_THAT(takeover.status().message(), HasSubstr("job job-x: rank 0"));
  EXPECT_THAT(takeover.status().message(), HasSubstr("TRAINSCOPE_TOKEN or --token"));
  EXPECT_THAT(takeover.status().message(), HasSubstr((dir.path() / "token").string()));
  auto guessed = keeper.AdmitRank("guess", true, 0);
  EXPECT_EQ(guessed.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(JobTokenKeeperTest, CommandsAreRefusedBeforeAnyRankAttachedAndWithTheWrongToken) {
  ScopedTempDir dir;
  JobTokenKeeper keeper("j", dir.path(), JobToken{});
  EXPECT_EQ(keeper.AuthorizeCommand("x").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(keeper.AdmitRank("secret", false, 0).ok());
  const absl::Status wrong = keeper.AuthorizeCommand("guess");
  EXPECT_EQ(wrong.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(BadInputCause(wrong), "command.token");
  const absl::Status missing = keeper.AuthorizeCommand("");
  EXPECT_THAT(missing.message(), HasSubstr((dir.path() / "token").string()));
  EXPECT_TRUE(keeper.AuthorizeCommand("secret").ok());
}

}  // namespace
}  // namespace trainscope::collector
