#include "trainscope/client/connection_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace trainscope::client {
namespace {

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](std::string_view name) -> std::optional<std::string> {
    auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

absl::StatusOr<ConnectionOptions> Resolve(const std::vector<std::string>& argv,
                                          const EnvLookup& env) {
  base::ArgParser parser("test", "connection flags");
  ConnectionOptions::AddFlags(&parser, /*with_feed=*/true);
  absl::StatusOr<base::ParsedArgs> args = parser.Parse(argv);
  if (!args.ok()) return args.status();
  return ConnectionOptions::Resolve(*args, env);
}

TEST(ConnectionOptionsTest, DefaultsPutEveryEndpointOnTheLocalCollector) {
  absl::StatusOr<ConnectionOptions> options = Resolve({}, Env({}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->collector, "127.0.0.1:7070");
  EXPECT_EQ(options->feed, "tcp://127.0.0.1:7071");
  EXPECT_EQ(options->snapshot, "tcp://127.0.0.1:7072");
  EXPECT_EQ(options->timeout, absl::Seconds(10));
  EXPECT_FALSE(options->json);
}

TEST(ConnectionOptionsTest, AFlagBeatsTheEnvironmentAndTheFeedFollowsTheCollectorsHost) {
  absl::StatusOr<ConnectionOptions> options =
      Resolve({"--collector", "node-2:9000", "--timeout", "2.5"},
              Env({{"TRAINSCOPE_COLLECTOR", "node-9:7070"}, {"TRAINSCOPE_SNAPSHOT", "tcp://s:1"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->collector, "node-2:9000");
  EXPECT_EQ(options->feed, "tcp://node-2:7071");
  EXPECT_EQ(options->snapshot, "tcp://s:1");
  EXPECT_EQ(options->timeout, absl::Milliseconds(2500));
}

TEST(ConnectionOptionsTest, AnEmptyCollectorIsRefused) {
  absl::StatusOr<ConnectionOptions> options = Resolve({"--collector="}, Env({}));
  EXPECT_TRUE(absl::IsInvalidArgument(options.status())) << options.status();
}

TEST(ConnectionOptionsTest, TheSnapshotServerSitsNextToTheFeed) {
  EXPECT_EQ(ConnectionOptions::SnapshotNextToFeed("tcp://node-1:7071"), "tcp://node-1:7072");
  EXPECT_EQ(ConnectionOptions::SnapshotNextToFeed("tcp://[::1]:9"), "tcp://[::1]:7072");
  EXPECT_EQ(ConnectionOptions::SnapshotNextToFeed("ipc-without-port"), "ipc-without-port");
}

TEST(ConnectionOptionsTest, TheCommandsServiceSitsNextToTheFeed) {
  EXPECT_EQ(ConnectionOptions::CollectorNextToFeed("tcp://node-1:7071"), "node-1:7070");
  EXPECT_EQ(ConnectionOptions::CollectorNextToFeed("tcp://:7071"), "");
  EXPECT_EQ(ConnectionOptions::CollectorNextToFeed("node-1:7071"), "");
  EXPECT_EQ(ConnectionOptions::CollectorNextToFeed(""), "");
}

}  // namespace
}  // namespace trainscope::client
