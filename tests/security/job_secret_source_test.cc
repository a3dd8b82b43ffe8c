#include "trainscope/security/job_secret_source.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"
#include "trainscope/security/job_key.h"

namespace trainscope::security {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

constexpr char kKey[] = "0123456789abcdef0123456789abcdef";

JobSecretSource::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

std::string WriteFile(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path.string();
}

TEST(JobSecretSourceTest, TheDefaultKeyLivesInTheUsersConfigDirectory) {
  EXPECT_THAT(JobSecretSource::DefaultKeyPath(Env({{"XDG_CONFIG_HOME", "/x/cfg"}, {"HOME", "/h"}})),
              Optional(std::string("/x/cfg/trainscope/job.key")));
  // A relative XDG_CONFIG_HOME is invalid (XDG base directory spec).
  EXPECT_THAT(JobSecretSource::DefaultKeyPath(Env({{"XDG_CONFIG_HOME", "cfg"}, {"HOME", "/h"}})),
              Optional(std::string("/h/.config/trainscope/job.key")));
  EXPECT_EQ(JobSecretSource::DefaultKeyPath(Env({})), std::nullopt);
}

TEST(JobSecretSourceTest, FirstFoundWinsAndTheDefaultKeyDerivesTheJobsSecret) {
  TempDir dir;
  const std::string home = dir.path().string();
  WriteFile(dir.path() / ".config/trainscope/job.key", std::string(kKey) + "\n", 0600);
  const std::string expected = JobKey(kKey).JobSecret("resnet-17");

  auto found = JobSecretSource::Resolve("resnet-17", Env({{"HOME", home}}));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->secret, expected);
  EXPECT_THAT((*found)->source, HasSubstr("job.key"));

  const std::string secret_file = WriteFile(dir.path() / "secret", " from-file \n2nd\n", 0600);
  found = JobSecretSource::Resolve(
      "resnet-17", Env({{"HOME", home}, {"TRAINSCOPE_JOB_SECRET_FILE", secret_file}}));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->secret, "from-file");

  found = JobSecretSource::Resolve("resnet-17", Env({{"HOME", home},
                                                     {"TRAINSCOPE_JOB_SECRET_FILE", secret_file},
                                                     {"TRAINSCOPE_JOB_SECRET", "from-env"}}));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->secret, "from-env");

  const std::string other_key =
      WriteFile(dir.path() / "other.key", "another key of thirty-two chars!!\n", 0600);
  found = JobSecretSource::Resolve("resnet-17",
                                   Env({{"HOME", home}, {"TRAINSCOPE_JOB_KEY_FILE", other_key}}));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->secret, JobKey("another key of thirty-two chars!!").JobSecret("resnet-17"));
}

TEST(JobSecretSourceTest, NoKeyMeansNoProofAndAnUnreadableGivenFileIsAnError) {
  TempDir dir;
  auto found = JobSecretSource::Resolve("j", Env({{"HOME", dir.path().string()}}));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, std::nullopt);

  const std::string missing = (dir.path() / "missing").string();
  found = JobSecretSource::Resolve("j", Env({{"TRAINSCOPE_JOB_SECRET_FILE", missing}}));
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("TRAINSCOPE_JOB_SECRET_FILE"));
  EXPECT_THAT(found.status().message(), HasSubstr(missing));

  const std::string empty = WriteFile(dir.path() / "empty", "\n", 0600);
  found = JobSecretSource::Resolve("j", Env({{"TRAINSCOPE_JOB_SECRET_FILE", empty}}));
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("is empty"));

  found = JobSecretSource::Resolve("j", Env({{"TRAINSCOPE_JOB_KEY_FILE", missing}}));
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("TRAINSCOPE_JOB_KEY_FILE"));
}

TEST(JobKeyReadOrCreateTest, MakesAPrivateKeyOnceAndReadsItAfterwards) {
  TempDir dir;
  const std::string path = (dir.path() / "cfg/trainscope/job.key").string();
  bool created = false;
  auto first = JobKey::ReadOrCreateFile(path, "the default job key", &created);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(created);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir.path() / "cfg/trainscope").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto second = JobKey::ReadOrCreateFile(path, "the default job key", &created);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(created);
  EXPECT_EQ(second->JobSecret("j"), first->JobSecret("j"));  // the same key, not a new one
  // Nothing is left beside it.
  int entries = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator(dir.path() / "cfg/trainscope")) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(JobKeyReadOrCreateTest, AnExistingKeyOthersCanReadIsRefusedNotReplaced) {
  TempDir dir;
  const std::string path = WriteFile(dir.path() / "job.key", std::string(kKey) + "\n", 0644);
  bool created = true;
  auto key = JobKey::ReadOrCreateFile(path, "the default job key", &created);
  ASSERT_FALSE(key.ok());
  EXPECT_FALSE(created);
  EXPECT_THAT(key.status().message(), HasSubstr("readable by every user"));
}

}  // namespace
}  // namespace trainscope::security
