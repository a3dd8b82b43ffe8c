// `trainscope traffic`: usage errors name the bad input; a stored job read
// with --data-dir (a real NCCL trace imported: rank 0 of 2, so none of its
// collectives has every participant) prints its step range and says that no
// traffic between devices was derived, in text, and nothing in --json.
// The counts themselves are tested on a real job in tests/python/test_traffic.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "trainscope/cli/cli.h"

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kData = KINETO_GPU_DATA;

class TrafficCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("trainscope-traffic-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    CommandContext ctx;
    ctx.out = &out_;
    ctx.err = &err_;
    ctx.env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
    ctx.requested_by = "tester@box";
    return RunCli(args, ctx);
  }

  std::filesystem::path dir_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(TrafficCommandTest, BadArgumentsAreUsageErrorsNamingTheInput) {
  EXPECT_EQ(Run({"traffic"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("JOB"));
  EXPECT_EQ(Run({"traffic", "no/such job"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("JOB"));
  EXPECT_EQ(Run({"traffic", "job", "--first", "-3"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("first"));
  EXPECT_EQ(Run({"traffic", "job", "--last", "many"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("last"));
  EXPECT_EQ(Run({"traffic", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("--group"));
}

TEST_F(TrafficCommandTest, AStoredJobWithoutCompleteCommunicationHasNoPairs) {
  ASSERT_TRUE(std::filesystem::is_directory(kData)) << kData << " is missing";
  ASSERT_EQ(Run({"import", "--job", "nccl", "--data-dir", (dir_ / "data").string(),
                 (kData / "nccl_parser_config__nccl_data.json.gz").string()}),
            0)
      << err_.str();
  ASSERT_EQ(Run({"traffic", "nccl", "--data-dir", (dir_ / "data").string()}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("job nccl, steps "));
  EXPECT_THAT(out_.str(), HasSubstr("no traffic between devices in these steps"));
  ASSERT_EQ(Run({"traffic", "nccl", "--data-dir", (dir_ / "data").string(), "--json"}), 0);
  EXPECT_EQ(out_.str(), "");
  // A job the data dir does not hold fails by name.
  EXPECT_EQ(Run({"traffic", "absent", "--data-dir", (dir_ / "data").string()}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("absent"));
}

}  // namespace
}  // namespace trainscope::cli
