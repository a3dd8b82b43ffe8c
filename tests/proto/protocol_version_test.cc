#include "trainscope/proto/protocol_version.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::protocol {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ProtocolVersionTest, PicksTheHighestVersionBothSpeak) {
  EXPECT_EQ(*NegotiateProtocolVersion({1, 1}, {1, 1}, "0.1.0"), 1u);
  // A newer agent that still speaks the collector's versions.
  EXPECT_EQ(*NegotiateProtocolVersion({2, 5}, {1, 3}, "0.4.0"), 3u);
  // An older agent inside the collector's range.
  EXPECT_EQ(*NegotiateProtocolVersion({1, 2}, {1, 4}, "0.2.0"), 2u);
  EXPECT_EQ(*NegotiateProtocolVersion({3, 3}, {1, 4}, ""), 3u);
}

TEST(ProtocolVersionTest, AnOldHelloWithoutAMinimumSpeaksItsOneVersion) {
  v1::Hello hello;
  hello.set_protocol_version(4);
  const VersionRange range = AgentVersionRange(hello);
  EXPECT_EQ(range.min, 4u);
  EXPECT_EQ(range.max, 4u);
  hello.set_min_protocol_version(2);
  EXPECT_EQ(AgentVersionRange(hello).min, 2u);
}

TEST(ProtocolVersionTest, RefusesRangesThatDoNotMeetNamingBothAndWhomToUpgrade) {
  absl::StatusOr<uint32_t> newer = NegotiateProtocolVersion({5, 7}, {1, 3}, "0.9.0");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(newer.status().message(),
              AllOf(HasSubstr("hello.protocol_version"), HasSubstr("trainscope 0.9.0"),
                    HasSubstr("protocol versions 5 to 7"), HasSubstr("protocol versions 1 to 3"),
                    HasSubstr(kTrainscopeVersion), HasSubstr("upgrade the collector")));
  absl::StatusOr<uint32_t> older = NegotiateProtocolVersion({1, 1}, {2, 3}, "0.0.1");
  ASSERT_FALSE(older.ok());
  EXPECT_THAT(older.status().message(),
              AllOf(HasSubstr("protocol version 1,"), HasSubstr("upgrade the agent")));
}

TEST(ProtocolVersionTest, RefusesAnEmptyOrInvertedRange) {
  EXPECT_THAT(NegotiateProtocolVersion({0, 0}, {1, 1}, "").status().message(),
              HasSubstr("not a range of versions"));
  EXPECT_THAT(NegotiateProtocolVersion({3, 2}, {1, 5}, "").status().message(),
              HasSubstr("min_protocol_version 3"));
}

TEST(ProtocolVersionTest, TheAgentChecksTheVersionTheCollectorChose) {
  EXPECT_EQ(*CheckAckedProtocolVersion(0), kProtocolVersion);  // before negotiation
  EXPECT_EQ(*CheckAckedProtocolVersion(kProtocolVersion), kProtocolVersion);
  absl::StatusOr<uint32_t> unknown = CheckAckedProtocolVersion(kProtocolVersion + 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("does not speak"));
}

}  // namespace
}  // namespace trainscope::protocol
