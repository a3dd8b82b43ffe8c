#include "trainscope/tier/tier_role.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::tier {
namespace {

TEST(TierRoleTest, NoRoleLeavesTheStatusUnset) {
  absl::StatusOr<std::unique_ptr<TierRole>> role = TierRole::Create({});
  ASSERT_TRUE(role.ok()) << role.status();
  v1::TierStatus status;
  (*role)->FillStatus(&status);
  EXPECT_FALSE(status.node());
  EXPECT_FALSE(status.job_level());
  EXPECT_EQ(status.upstream_url(), "");
}

// What `trainscope status` and /metrics show must not carry NATS credentials.
TEST(TierRoleTest, StatusNamesTheRolesAndTheUrlsWithoutCredentials) {
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "tier_role_test.XXXXXX").string();
  ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
  const std::filesystem::path dir(dir_template);
  TierRoleOptions options;
  options.node = "node-a";
  options.upstream = "nats://alice:s3cret@127.0.0.1:1";
  options.publish = "nats://token@127.0.0.1:1";
  options.data_dir = dir;
  {
    absl::StatusOr<std::unique_ptr<TierRole>> role = TierRole::Create(options);
    ASSERT_TRUE(role.ok()) << role.status();
    v1::TierStatus status;
    (*role)->FillStatus(&status);
    EXPECT_TRUE(status.node());
    EXPECT_TRUE(status.job_level());
    EXPECT_EQ(status.upstream_url(), "nats://127.0.0.1:1");
    EXPECT_EQ(status.publish_url(), "nats://127.0.0.1:1");
    EXPECT_FALSE(status.connected());  // nothing listens on port 1
    EXPECT_EQ(status.published(), 0u);
    EXPECT_EQ(status.consumed(), 0u);  // not started: no consumer yet
    (*role)->StopPublishing();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainscope::tier
