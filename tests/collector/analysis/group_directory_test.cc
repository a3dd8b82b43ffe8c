#include "trainscope/collector/analysis/group_directory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/collector/analysis/job_strings.h"

namespace trainscope::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

TEST(JobStringsTest, InternsOnceAndZeroIsEmpty) {
  JobStrings strings;
  EXPECT_EQ(strings.Intern(""), 0u);
  const uint32_t a = strings.Intern("aten::mm");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(strings.Intern("aten::mm"), a);
  EXPECT_EQ(strings.Find("aten::mm"), a);
  EXPECT_EQ(strings.Find("never"), 0u);
  EXPECT_EQ(strings.Get(a), "aten::mm");
  EXPECT_EQ(strings.Get(999), "");
  // Views stay valid while the table grows.
  absl::string_view view = strings.Get(a);
  for (int i = 0; i < 1000; ++i) strings.Intern("s" + std::to_string(i));
  EXPECT_EQ(view, "aten::mm");
}

TEST(GroupDirectoryTest, ParsesRankLists) {
  EXPECT_THAT(GroupDirectory::ParseRanks("pg:1[2,0]"), Optional(ElementsAre(0u, 2u)));
  EXPECT_THAT(GroupDirectory::ParseRanks("pg:7[3]"), Optional(ElementsAre(3u)));
  EXPECT_EQ(GroupDirectory::ParseRanks("pg:1"), std::nullopt);
  EXPECT_EQ(GroupDirectory::ParseRanks("pg:1[]"), std::nullopt);
  EXPECT_EQ(GroupDirectory::ParseRanks("pg:1[a,1]"), std::nullopt);
  EXPECT_EQ(GroupDirectory::ParseRanks("pg:1[0,1"), std::nullopt);
}

TEST(GroupDirectoryTest, DefaultGroupIsTheWorld) {
  JobStrings strings;
  GroupDirectory groups(&strings);
  groups.set_world_size(3);
  EXPECT_THAT(groups.Members(0), ElementsAre(0u, 1u, 2u));
  const uint32_t named = strings.Intern("default_pg");
  EXPECT_THAT(groups.Members(named), ElementsAre(0u, 1u, 2u));
  EXPECT_TRUE(groups.MembershipKnown(named));
  // The world grows when a later hello says so.
  groups.set_world_size(4);
  EXPECT_THAT(groups.Members(named), ElementsAre(0u, 1u, 2u, 3u));
}

TEST(GroupDirectoryTest, NamedRanksWinOverUse) {
  JobStrings strings;
  GroupDirectory groups(&strings);
  groups.set_world_size(4);
  const uint32_t g = strings.Intern("pg:1[1,3]");
  groups.NoteUse(g, 0);  // a wrong report does not change a listed membership
  EXPECT_THAT(groups.Members(g), ElementsAre(1u, 3u));
  EXPECT_TRUE(groups.MembershipKnown(g));
}

TEST(GroupDirectoryTest, UnnamedGroupsLearnFromUse) {
  JobStrings strings;
  GroupDirectory groups(&strings);
  groups.set_world_size(4);
  const uint32_t g = strings.Intern("pg@7f00");
  EXPECT_FALSE(groups.MembershipKnown(g));
  EXPECT_TRUE(groups.Members(g).empty());
  groups.NoteUse(g, 2);
  groups.NoteUse(g, 0);
  groups.NoteUse(g, 2);
  EXPECT_THAT(groups.Members(g), ElementsAre(0u, 2u));
}

}  // namespace
}  // namespace trainscope::collector
