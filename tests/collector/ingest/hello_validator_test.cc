#include "trainscope/collector/ingest/hello_validator.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/collector_test_util.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;
using testing::MakeHello;

v1::Hello Valid() { return MakeHello("job-1", 2, 4, 0x1234); }

TEST(HelloValidatorTest, AcceptsValidHello) { EXPECT_TRUE(ValidateHello(Valid()).ok()); }

TEST(HelloValidatorTest, AProtocolVersionWeDoNotSpeakIsFailedPreconditionNamingBothVersions) {
  v1::Hello hello = Valid();
  hello.set_protocol_version(kProtocolVersion + 41);  // and no older one (no minimum)
  absl::Status s = ValidateHello(hello);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hello.protocol_version"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("agent speaks protocol version " + std::to_string(kProtocolVersion + 41)));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("collector (trainscope " + std::string(kTrainscopeVersion) +
                        ") speaks protocol versions " + std::to_string(kMinProtocolVersion) +
                        " to " + std::to_string(kProtocolVersion)));
  EXPECT_EQ(BadInputCause(s), "hello.protocol_version");
}

TEST(HelloValidatorTest, ANewerAgentThatAlsoSpeaksOurVersionIsAccepted) {
  v1::Hello hello = Valid();
  hello.set_protocol_version(kProtocolVersion + 41);
  hello.set_min_protocol_version(kProtocolVersion);
  EXPECT_TRUE(ValidateHello(hello).ok());
}

TEST(HelloValidatorTest, BadJobIdsAreRefusedNamingTheField) {
  for (const std::string& bad : {std::string(""), std::string("a/b"), std::string(".."),
                                 std::string("job id"), std::string(129, 'x')}) {
    v1::Hello hello = Valid();
    hello.set_job_id(bad);
    absl::Status s = ValidateHello(hello);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("hello.job_id")) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("[A-Za-z0-9._-]")) << bad;
  }
  EXPECT_TRUE(IsValidJobId(std::string(128, 'x')));
  EXPECT_TRUE(IsValidJobId("A.b_c-9"));
}

TEST(HelloValidatorTest, WorldSizeOutOfRange) {
  for (uint32_t world : {0u, kMaxWorldSize + 1}) {
    v1::Hello hello = Valid();
    hello.set_rank(0);
    hello.set_world_size(world);
    absl::Status s = ValidateHello(hello);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("hello.world_size: " + std::to_string(world)));
    EXPECT_THAT(std::string(s.message()), HasSubstr("expected 1 to"));
  }
}

TEST(HelloValidatorTest, RankNotBelowWorldSize) {
  v1::Hello hello = Valid();
  hello.set_rank(7);
  hello.set_world_size(4);
  absl::Status s = ValidateHello(hello);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "hello.rank: 7 is not below hello.world_size 4");
  EXPECT_EQ(BadInputCause(s), "hello.rank");
  hello.set_rank(4);
  EXPECT_FALSE(ValidateHello(hello).ok());
  hello.set_rank(3);
  EXPECT_TRUE(ValidateHello(hello).ok());
}

TEST(HelloValidatorTest, InstanceIdZero) {
  v1::Hello hello = Valid();
  hello.set_agent_instance_id(0);
  absl::Status s = ValidateHello(hello);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hello.agent_instance_id"));
}

TEST(HelloValidatorTest, OversizedToken) {
  v1::Hello hello = Valid();
  hello.set_job_token(std::string(kMaxJobTokenLength + 1, 't'));
  absl::Status s = ValidateHello(hello);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hello.job_token"));
}

}  // namespace
}  // namespace trainscope::collector
