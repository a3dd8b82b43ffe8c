#include "trainscope/client/environment.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace trainscope::client {
namespace {

TEST(EnvironmentTest, ProcessEnvReadsSetVariablesAndTreatsEmptyAsUnset) {
  setenv("TRAINSCOPE_ENVIRONMENT_TEST", "node-3:7070", 1);
  setenv("TRAINSCOPE_ENVIRONMENT_TEST_EMPTY", "", 1);
  unsetenv("TRAINSCOPE_ENVIRONMENT_TEST_UNSET");
  const EnvLookup env = ProcessEnv();
  EXPECT_EQ(env("TRAINSCOPE_ENVIRONMENT_TEST"), "node-3:7070");
  EXPECT_EQ(env("TRAINSCOPE_ENVIRONMENT_TEST_EMPTY"), std::nullopt);
  EXPECT_EQ(env("TRAINSCOPE_ENVIRONMENT_TEST_UNSET"), std::nullopt);
}

}  // namespace
}  // namespace trainscope::client
