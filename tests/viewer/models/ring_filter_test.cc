#include "trainscope/viewer/ring_filter.h"

#include <gtest/gtest.h>

namespace trainscope::viewer {
namespace {

TEST(RingFilterTest, ParsesEveryTermAndReadsBack) {
  absl::StatusOr<RingFilter> filter =
      RingFilter::Parse("host=node-1,node-2  rack=rack-0 x=2-5 y=3");
  ASSERT_TRUE(filter.ok()) << filter.status();
  EXPECT_EQ(filter->hosts, (std::set<std::string>{"node-1", "node-2"}));
  EXPECT_EQ(filter->racks, (std::set<std::string>{"rack-0"}));
  EXPECT_EQ(filter->x, (RingFilter::Range{2, 5}));
  EXPECT_EQ(filter->y, (RingFilter::Range{3, 3}));
  EXPECT_EQ(filter->ToString(), "host=node-1,node-2 rack=rack-0 x=2-5 y=3");
  EXPECT_EQ(*RingFilter::Parse(filter->ToString()), *filter);
  EXPECT_TRUE(RingFilter::Parse("")->empty());
}

TEST(RingFilterTest, AcceptsOnlyWhatEveryPartAllows) {
  const RingFilter filter = *RingFilter::Parse("rack=rack-0 x=2-5");
  const std::pair<uint32_t, uint32_t> in{3, 9}, out{6, 9};
  EXPECT_TRUE(filter.Accepts("node-1", "rack-0", &in));
  EXPECT_FALSE(filter.Accepts("node-1", "rack-1", &in));
  EXPECT_FALSE(filter.Accepts("node-1", "rack-0", &out));
  EXPECT_FALSE(filter.Accepts("node-1", "rack-0", nullptr));  // no coordinates to test
  EXPECT_TRUE(RingFilter().Accepts("any", "any", nullptr));
  EXPECT_FALSE(RingFilter::Parse("host=node-0")->Accepts("node-10", "rack-0", nullptr));
}

TEST(RingFilterTest, RefusesBadTermsNamingThem) {
  for (const char* text : {"node=1", "host=", "rack", "x=a", "x=5-2", "y=1-2-3"}) {
    absl::StatusOr<RingFilter> filter = RingFilter::Parse(text);
    ASSERT_FALSE(filter.ok()) << text;
    EXPECT_EQ(filter.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(filter.status().message()).find(text), std::string::npos)
        << filter.status();
  }
}

}  // namespace
}  // namespace trainscope::viewer
