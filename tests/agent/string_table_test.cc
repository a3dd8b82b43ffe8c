#include "string_table.h"

#include <string>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST(StringTableTest, EmptyStringIsZeroAndIdsAreStable) {
  StringTable table(512, 100);
  EXPECT_EQ(table.Intern(""), kEmptyString);
  const StringId conv = table.Intern("aten::conv2d");
  const StringId relu = table.Intern("aten::relu");
  EXPECT_NE(conv, kEmptyString);
  EXPECT_NE(conv, relu);
  EXPECT_EQ(table.Intern("aten::conv2d"), conv);
  google::protobuf::RepeatedPtrField<std::string> out;
  table.CopyTo({relu, conv, kEmptyString, 12345}, &out);
  ASSERT_EQ(out.size(), 4);
  EXPECT_EQ(out[0], "aten::relu");
  EXPECT_EQ(out[1], "aten::conv2d");
  EXPECT_EQ(out[2], "");
  EXPECT_EQ(out[3], "");  // unknown id
}

TEST(StringTableTest, TruncatesOnCharacterBoundary) {
  // "é" is two bytes: cutting at 5 bytes must not split the third one.
  EXPECT_EQ(StringTable::Sanitize("ééé", 5), "éé");
  EXPECT_EQ(StringTable::Sanitize("abcdef", 3), "abc");
  StringTable table(4, 100);
  EXPECT_EQ(table.Intern("abcdef"), table.Intern("abcdxyz"));  // both become "abcd"
}

TEST(StringTableTest, ReplacesInvalidUtf8) {
  EXPECT_EQ(StringTable::Sanitize(std::string("a\xff"
                                              "b\xc3",
                                              4),
                                  100),
            "a?b?");
  EXPECT_EQ(StringTable::Sanitize("\xed\xa0\x80", 100), "???");  // surrogate
  EXPECT_EQ(StringTable::Sanitize("\xc0\x80", 100), "??");       // overlong
  EXPECT_EQ(StringTable::Sanitize("日本", 100), "日本");
}

TEST(StringTableTest, FullTableMapsNewStringsToOneId) {
  StringTable table(512, 3);  // "" + 2 strings
  const StringId a = table.Intern("a");
  const StringId b = table.Intern("b");
  const StringId c = table.Intern("c");
  const StringId d = table.Intern("d");
  EXPECT_NE(a, b);
  EXPECT_EQ(c, d);
  EXPECT_EQ(table.Intern("a"), a);
  google::protobuf::RepeatedPtrField<std::string> out;
  table.CopyTo({c}, &out);
  EXPECT_EQ(out[0], "(string table full)");
}

}  // namespace
}  // namespace trainscope::agent
