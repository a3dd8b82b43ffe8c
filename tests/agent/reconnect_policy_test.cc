#include "reconnect_policy.h"

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

TEST(ReconnectPolicyTest, BackoffDoublesWithJitterUpToTheMaximum) {
  ReconnectPolicy policy(absl::Milliseconds(100), absl::Seconds(1), /*jitter_seed=*/7, "c:1");
  absl::Duration expected = absl::Milliseconds(100);
  for (int i = 0; i < 8; ++i) {
    policy.RetryLater(/*permanent_refusal=*/false, kStart);
    const absl::Duration wait = policy.next_attempt() - kStart;
    EXPECT_GE(wait, expected * 0.8) << i;
    EXPECT_LE(wait, expected * 1.2) << i;
    expected = std::min(expected * 2, absl::Seconds(1));
  }
  // A HelloAck starts over at the minimum.
  policy.OnConnected();
  policy.RetryLater(false, kStart);
  EXPECT_LE(policy.next_attempt() - kStart, absl::Milliseconds(120));
  // A permanent refusal waits the longest at once.
  policy.RetryLater(/*permanent_refusal=*/true, kStart);
  EXPECT_GE(policy.next_attempt() - kStart, absl::Milliseconds(800));
}

TEST(ReconnectPolicyTest, PermanentRefusalsAreThoseARetryCannotFix) {
  EXPECT_TRUE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kUnauthenticated));
  EXPECT_TRUE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kUnavailable));
  EXPECT_FALSE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kCancelled));
  EXPECT_FALSE(ReconnectPolicy::IsPermanentRefusal(absl::StatusCode::kOk));
}

TEST(ReconnectPolicyTest, AnUnreachableCollectorIsReportedOnceAfterAWhile) {
  ReconnectPolicy policy(absl::Milliseconds(100), absl::Seconds(1), 7, "host:5000");
  EXPECT_FALSE(policy.Unreachable(kStart).has_value());
  EXPECT_EQ(policy.next_attempt(), kStart);  // the caller's wait paced it
  EXPECT_FALSE(policy.Unreachable(kStart + absl::Seconds(1)).has_value());
  const auto line = policy.Unreachable(kStart + ReconnectPolicy::kReportDownAfter);
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("host:5000 is not reachable"), std::string::npos) << *line;
  EXPECT_FALSE(policy.Unreachable(kStart + absl::Seconds(60)).has_value());
  // Up again: said, since the user was told it was down; not a reconnect.
  const ReconnectPolicy::Connected connected = policy.OnConnected();
  EXPECT_FALSE(connected.reconnect);
  ASSERT_TRUE(connected.line.has_value());
  EXPECT_NE(connected.line->find("connected to the collector at host:5000"), std::string::npos);
}

TEST(ReconnectPolicyTest, TheFirstConnectionIsSilentAndLaterOnesAreReconnects) {
  ReconnectPolicy policy(absl::Milliseconds(100), absl::Seconds(1), 7, "c:1");
  ReconnectPolicy::Connected first = policy.OnConnected();
  EXPECT_FALSE(first.reconnect);
  EXPECT_FALSE(first.line.has_value());
  const auto broke = policy.OnDisconnected(absl::UnavailableError("socket closed"),
                                           "stream write failed", /*was_streaming=*/true, kStart);
  ASSERT_TRUE(broke.has_value());
  EXPECT_NE(broke->find("stream write failed (UNAVAILABLE: socket closed); reconnecting"),
            std::string::npos)
      << *broke;
  EXPECT_GT(policy.next_attempt(), kStart);
  // Failed attempts while down are not repeated to the user.
  EXPECT_FALSE(
      policy.OnDisconnected(absl::UnavailableError("x"), "no HelloAck", false, kStart).has_value());
  const ReconnectPolicy::Connected again = policy.OnConnected();
  EXPECT_TRUE(again.reconnect);
  EXPECT_TRUE(again.line.has_value());
}

TEST(ReconnectPolicyTest, EachDistinctRefusalIsSaidOnce) {
  ReconnectPolicy policy(absl::Milliseconds(100), absl::Seconds(30), 7, "c:1");
  const absl::Status bad_token = absl::UnauthenticatedError("bad job token");
  const auto first = policy.OnDisconnected(bad_token, "ended", false, kStart);
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("refused the stream: UNAUTHENTICATED: bad job token; retrying every 30s"),
            std::string::npos)
      << *first;
  EXPECT_GE(policy.next_attempt() - kStart, absl::Seconds(24));
  EXPECT_FALSE(policy.OnDisconnected(bad_token, "ended", false, kStart).has_value());
  EXPECT_TRUE(policy
                  .OnDisconnected(absl::FailedPreconditionError("protocol 9 is not supported"),
                                  "ended", false, kStart)
                  .has_value());
}

}  // namespace
}  // namespace trainscope::agent
