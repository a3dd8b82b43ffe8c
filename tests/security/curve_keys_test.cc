#include "trainscope/security/curve_keys.h"

#include <sys/stat.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "temp_dir.h"

namespace trainscope::security {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

void Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(CurveKeysTest, AWrittenPairReadsBackAndTheSecretFileIsPrivate) {
  TempDir dir;
  absl::StatusOr<CurveKeyPair> pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(pair->public_key.size(), kCurveKeyZ85Length);
  const std::string prefix = (dir.path() / "collector").string();
  ASSERT_TRUE(WriteCurveKeyPair(*pair, prefix).ok());
  struct stat st;
  ASSERT_EQ(stat((prefix + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  absl::StatusOr<CurveKeyPair> loaded = LoadCurveSecretKeyFile(prefix + ".key", "--curve-secret-key");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->secret_key, pair->secret_key);
  EXPECT_EQ(loaded->public_key, pair->public_key);  // derived from the secret key
  absl::StatusOr<std::string> from_file = ParseCurvePublicKey(prefix + ".pub", "--curve-server-key");
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(*from_file, pair->public_key);
  EXPECT_EQ(*ParseCurvePublicKey(pair->public_key, "--curve-server-key"), pair->public_key);

  // Never overwritten: a second keygen to the same prefix fails.
  absl::Status again = WriteCurveKeyPair(*GenerateCurveKeyPair(), prefix);
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(LoadCurveSecretKeyFile(prefix + ".key", "x")->secret_key, pair->secret_key);
}

TEST(CurveKeysTest, AClientListSkipsCommentsAndBlankLinesAndRefusesJunk) {
  TempDir dir;
  const std::string a = GenerateCurveKeyPair()->public_key;
  const std::string b = GenerateCurveKeyPair()->public_key;
  Write(dir.path() / "clients", "# viewers\n\n" + a + "\n  " + b + "  \n");
  absl::StatusOr<std::set<std::string>> keys =
      LoadCurvePublicKeyList((dir.path() / "clients").string(), "--curve-client-keys");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(*keys, (std::set<std::string>{a, b}));

  Write(dir.path() / "bad", a + "\nnot-a-key\n");
  absl::StatusOr<std::set<std::string>> bad =
      LoadCurvePublicKeyList((dir.path() / "bad").string(), "--curve-client-keys");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              AllOf(HasSubstr("--curve-client-keys"), HasSubstr("line 2"), HasSubstr("40 Z85")));
  Write(dir.path() / "empty", "# nobody yet\n");
  EXPECT_THAT(LoadCurvePublicKeyList((dir.path() / "empty").string(), "--curve-client-keys")
                  .status()
                  .message(),
              HasSubstr("holds no key"));
}

TEST(CurveKeysTest, ASecretKeyFileWithTwoKeysOrNoneIsRefused) {
  TempDir dir;
  Write(dir.path() / "two", GenerateCurveKeyPair()->secret_key + "\n" +
                                GenerateCurveKeyPair()->secret_key + "\n");
  EXPECT_THAT(LoadCurveSecretKeyFile((dir.path() / "two").string(), "--curve-key").status().message(),
              HasSubstr("holds 2 keys"));
  EXPECT_THAT(LoadCurveSecretKeyFile((dir.path() / "missing").string(), "--curve-key")
                  .status()
                  .message(),
              AllOf(HasSubstr("--curve-key"), HasSubstr("cannot read")));
  EXPECT_THAT(ParseCurvePublicKey("", "--curve-server-key").status().message(), HasSubstr("empty"));
}

TEST(CurveKeysTest, BinaryKeysAsZapHandsThemOverBecomeZ85) {
  const std::string binary(32, '\x01');
  EXPECT_EQ(CurveKeyToZ85(binary).size(), kCurveKeyZ85Length);
  EXPECT_EQ(CurveKeyToZ85("short"), "");
}

}  // namespace
}  // namespace trainscope::security
