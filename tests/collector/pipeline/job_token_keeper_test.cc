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
  absl::StatusOr<std::string> first = keeper.AdmitRank("secret");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "");  // nothing generated
  EXPECT_EQ(ReadJobToken(dir.path())->value, "secret");

  EXPECT_TRUE(keeper.AdmitRank("secret").ok());
  absl::StatusOr<std::string> wrong = keeper.AdmitRank("guess");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(BadInputCause(wrong.status()), "hello.job_token");
  absl::StatusOr<std::string> missing = keeper.AdmitRank("");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(missing.status().message(), HasSubstr("missing job token"));
}

TEST(JobTokenKeeperTest, AJobWithoutTokenGetsOneGeneratedForItsFirstRankOnly) {
  ScopedTempDir dir;
  JobTokenKeeper keeper("j", dir.path(), JobToken{});
  absl::StatusOr<std::string> generated = keeper.AdmitRank("");
  ASSERT_TRUE(generated.ok());
  EXPECT_EQ(generated->size(), 32u);
  EXPECT_EQ(ReadJobToken(dir.path())->value, *generated);
  absl::StatusOr<std::string> second = keeper.AdmitRank("");  // admitted, nothing new sent
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "");
  EXPECT_TRUE(keeper.AuthorizeCommand(*generated).ok());
  EXPECT_EQ(keeper.AuthorizeCommand("").code(), absl::StatusCode::kPermissionDenied);
}

TEST(JobTokenKeeperTest, CommandsAreRefusedBeforeAnyRankAttachedAndWithTheWrongToken) {
  ScopedTempDir dir;
  JobTokenKeeper keeper("j", dir.path(), JobToken{});
  EXPECT_EQ(keeper.AuthorizeCommand("x").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(keeper.AdmitRank("secret").ok());
  const absl::Status wrong = keeper.AuthorizeCommand("guess");
  EXPECT_EQ(wrong.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(BadInputCause(wrong), "command.token");
  const absl::Status missing = keeper.AuthorizeCommand("");
  EXPECT_THAT(missing.message(), HasSubstr((dir.path() / "token").string()));
  EXPECT_TRUE(keeper.AuthorizeCommand("secret").ok());
}

}  // namespace
}  // namespace trainscope::collector
