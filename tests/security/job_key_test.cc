#include "trainscope/security/job_key.h"

#include <sys/stat.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"

namespace trainscope::security {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kKey[] = "0123456789abcdef0123456789abcdef";

std::string WriteKey(const TempDir& dir, const std::string& text, mode_t mode) {
  const std::string path = (dir.path() / "job.key").string();
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(JobKeyTest, TheSecretIsHmacSha256OfTheJobIdUnderTheKey) {
  // Computed apart with Python: hmac.new(key, b"trainscope job secret v1\nresnet-17",
  // hashlib.sha256).hexdigest(); launchers in other languages can mint it.
  JobKey key(kKey);
  EXPECT_EQ(key.JobSecret("resnet-17"),
            "a7c244a6763ab328d694a18f37bdcdc7d1a55f5501e164338c055a8feb287dcf");
  EXPECT_NE(key.JobSecret("resnet-18"), key.JobSecret("resnet-17"));
  EXPECT_NE(JobKey("another key of thirty-two chars!!").JobSecret("resnet-17"),
            key.JobSecret("resnet-17"));
}

TEST(JobKeyTest, ProvesOnlyTheJobsOwnSecret) {
  JobKey key(kKey);
  const std::string secret = key.JobSecret("job-a");
  EXPECT_TRUE(key.Proves("job-a", secret));
  EXPECT_FALSE(key.Proves("job-b", secret));
  EXPECT_FALSE(key.Proves("job-a", ""));
  EXPECT_FALSE(key.Proves("job-a", secret.substr(0, 63)));
  std::string flipped = secret;
  flipped[10] = flipped[10] == '0' ? '1' : '0';
  EXPECT_FALSE(key.Proves("job-a", flipped));
}

TEST(JobKeyTest, ReadsTheFirstLineTrimmed) {
  TempDir dir;
  absl::StatusOr<JobKey> key =
      JobKey::ReadFile(WriteKey(dir, std::string("  ") + kKey + "  \nignored\n", 0600), "--k");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->JobSecret("resnet-17"), JobKey(kKey).JobSecret("resnet-17"));
}

TEST(JobKeyTest, RefusesAKeyOthersCanReadNamingTheModeAndTheFix) {
  TempDir dir;
  absl::StatusOr<JobKey> key = JobKey::ReadFile(WriteKey(dir, kKey, 0644), "--job-key-file");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(),
              AllOf(HasSubstr("--job-key-file"), HasSubstr("0644"), HasSubstr("chmod 600")));
}

TEST(JobKeyTest, RefusesAShortKeyAndAMissingFile) {
  TempDir dir;
  absl::StatusOr<JobKey> short_key = JobKey::ReadFile(WriteKey(dir, "short\n", 0600), "--k");
  ASSERT_FALSE(short_key.ok());
  EXPECT_THAT(short_key.status().message(),
              AllOf(HasSubstr("5 characters"), HasSubstr("at least 32")));
  absl::StatusOr<JobKey> missing = JobKey::ReadFile("/nonexistent/job.key", "--k");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/job.key"));
}

TEST(JobKeyTest, WritesAPrivateNewKeyAndNeverOverwritesOne) {
  TempDir dir;
  const std::string path = (dir.path() / "new.key").string();
  ASSERT_TRUE(JobKey::WriteNewKeyFile(path).ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  absl::StatusOr<JobKey> first = JobKey::ReadFile(path, "--k");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::Status again = JobKey::WriteNewKeyFile(path);
  EXPECT_THAT(again.message(), HasSubstr("never overwritten"));
  absl::StatusOr<JobKey> still = JobKey::ReadFile(path, "--k");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->JobSecret("j"), first->JobSecret("j"));
}

}  // namespace
}  // namespace trainscope::security
