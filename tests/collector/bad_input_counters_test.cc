#include "trainscope/collector/bad_input_counters.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/ingest/bad_input.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

class BadInputCountersTest : public ::testing::Test {
 protected:
  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::vector<std::string> lines_;
  BadInputCounters counters_{absl::Seconds(10), [this] { return now_; },
                             [this](absl::string_view line) { lines_.emplace_back(line); }};
};

TEST_F(BadInputCountersTest, CountsPerCauseAndLogsFirstOccurrenceAtOnce) {
  const absl::Status rank = BadInput(absl::StatusCode::kInvalidArgument, "hello.rank",
                                     "hello.rank: 7 is not below hello.world_size 4");
  counters_.Count(rank, "peer a");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_THAT(lines_[0], HasSubstr("bad input [hello.rank]"));
  EXPECT_THAT(lines_[0], HasSubstr("from peer a: hello.rank: 7 is not below"));
  counters_.Count(absl::InvalidArgumentError("untagged"), "peer b");
  EXPECT_EQ(lines_.size(), 2u);  // another cause: logged at once too
  EXPECT_EQ(counters_.count("hello.rank"), 1u);
  EXPECT_EQ(counters_.count("invalid_argument"), 1u);
  EXPECT_EQ(counters_.total(), 2u);
}

TEST_F(BadInputCountersTest, RateLimitsRepeatsAndReportsHowManyWereSuppressed) {
  const absl::Status s = BadInput(absl::StatusCode::kInvalidArgument, "batch.sequence", "dup");
  for (int i = 0; i < 100; ++i) counters_.Count(s, "peer");
  EXPECT_EQ(lines_.size(), 1u);
  now_ += absl::Seconds(9);
  counters_.Count(s, "peer");
  EXPECT_EQ(lines_.size(), 1u);
  now_ += absl::Seconds(1);
  counters_.Count(s, "peer");
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[1], HasSubstr("(101 since the last report)"));
  EXPECT_EQ(counters_.count("batch.sequence"), 102u);
  EXPECT_EQ(counters_.Snapshot().at("batch.sequence"), 102u);
}

}  // namespace
}  // namespace trainscope::collector
