#include "trainscope/client/token_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace trainscope::client {
namespace {

using ::testing::HasSubstr;

class TokenResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "data" / "jobs" / "job-1");
    Write(dir_ / "file-token", "from-file\n");
    Write(dir_ / "data" / "jobs" / "job-1" / "token", "  from-data-dir  \n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  TokenResolver::Sources All() {
    return {.flag = "from-flag",
            .file = dir_ / "file-token",
            .env = "from-env",
            .data_dir = dir_ / "data"};
  }
  std::filesystem::path dir_;
};

TEST_F(TokenResolverTest, FlagBeatsEverything) {
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", All());
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->token, "from-flag");
  EXPECT_EQ(token->source, "--token");
}

TEST_F(TokenResolverTest, FileBeatsEnvAndDataDir) {
  TokenResolver::Sources sources = All();
  sources.flag.reset();
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", sources);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->token, "from-file");  // newline stripped
  EXPECT_THAT(token->source, HasSubstr("--token-file"));
}

TEST_F(TokenResolverTest, EnvBeatsDataDir) {
  TokenResolver::Sources sources = All();
  sources.flag.reset();
  sources.file.reset();
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", sources);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->token, "from-env");
  EXPECT_EQ(token->source, "TRAINSCOPE_TOKEN");
}

TEST_F(TokenResolverTest, DataDirLastReadsTheJobsTokenFile) {
  TokenResolver::Sources sources{.data_dir = dir_ / "data"};
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", sources);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->token, "from-data-dir");
}

TEST_F(TokenResolverTest, EmptyEnvIsIgnored) {
  TokenResolver::Sources sources{.env = "", .data_dir = dir_ / "data"};
  EXPECT_EQ(TokenResolver::Resolve("job-1", sources)->token, "from-data-dir");
}

TEST_F(TokenResolverTest, NothingGivenNamesEveryWay) {
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", {});
  ASSERT_FALSE(token.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(token.status()));
  EXPECT_THAT(token.status().message(), HasSubstr("job job-1"));
  EXPECT_THAT(token.status().message(), HasSubstr("--token TOKEN"));
  EXPECT_THAT(token.status().message(), HasSubstr("--token-file FILE"));
  EXPECT_THAT(token.status().message(), HasSubstr("TRAINSCOPE_TOKEN"));
  EXPECT_THAT(token.status().message(), HasSubstr("--data-dir"));
}

TEST_F(TokenResolverTest, MissingFileIsAnErrorNotAFallThrough) {
  TokenResolver::Sources sources{.file = dir_ / "nope", .env = "from-env"};
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", sources);
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr((dir_ / "nope").string()));
}

TEST_F(TokenResolverTest, EmptyFileIsAnError) {
  Write(dir_ / "empty", "\n");
  absl::StatusOr<ResolvedToken> token = TokenResolver::Resolve("job-1", {.file = dir_ / "empty"});
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr("is empty"));
}

TEST_F(TokenResolverTest, DataDirWithoutTokenFileExplainsWhy) {
  absl::StatusOr<ResolvedToken> token =
      TokenResolver::Resolve("job-2", {.data_dir = dir_ / "data"});
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr("jobs/job-2/token"));
  EXPECT_THAT(token.status().message(), HasSubstr("only when it generated"));
}

TEST_F(TokenResolverTest, EmptyFlagIsAnError) {
  EXPECT_FALSE(TokenResolver::Resolve("job-1", {.flag = ""}).ok());
}

}  // namespace
}  // namespace trainscope::client
