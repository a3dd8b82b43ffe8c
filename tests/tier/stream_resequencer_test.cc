#include "trainscope/tier/stream_resequencer.h"

#include <string>

#include "gtest/gtest.h"

namespace trainscope::tier {
namespace {

using Seq = StreamResequencer<std::string>;

std::vector<std::string> Drain(Seq& seq) {
  std::vector<std::string> out;
  while (auto next = seq.PopReady()) out.push_back(*next);
  return out;
}

TEST(StreamResequencerTest, NothingComesOutBeforeStart) {
  Seq seq;
  std::string a = "1";
  EXPECT_EQ(seq.Add(1, a), Seq::Offer::kHeld);
  EXPECT_FALSE(seq.PopReady().has_value());
  EXPECT_TRUE(seq.Start(0).empty());
  EXPECT_EQ(Drain(seq), (std::vector<std::string>{"1"}));
}

TEST(StreamResequencerTest, WhatIsDurableAlreadyIsReturnedAtStart) {
  // A restart: JetStream redelivers 3..6, the log here holds up to 4.
  Seq seq;
  for (uint64_t s = 3; s <= 6; ++s) {
    std::string item = std::to_string(s);
    ASSERT_EQ(seq.Add(s, item), Seq::Offer::kHeld);
  }
  EXPECT_EQ(seq.Start(4), (std::vector<std::string>{"3", "4"}));
  EXPECT_EQ(Drain(seq), (std::vector<std::string>{"5", "6"}));
  std::string late = "4";
  EXPECT_EQ(seq.Add(4, late), Seq::Offer::kDuplicate);
  EXPECT_EQ(late, "4");  // left with the caller
}

TEST(StreamResequencerTest, ABatchPastAGapWaitsForIt) {
  Seq seq;
  seq.Start(0);
  std::string one = "1", three = "3", two = "2";
  seq.Add(1, one);
  seq.Add(3, three);
  EXPECT_EQ(Drain(seq), (std::vector<std::string>{"1"}));
  EXPECT_EQ(seq.held(), 1u);
  seq.Add(2, two);
  EXPECT_EQ(Drain(seq), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(seq.last(), 3u);
}

TEST(StreamResequencerTest, ACopyOfAHeldBatchIsADuplicate) {
  Seq seq;
  std::string first = "first", copy = "copy";
  EXPECT_EQ(seq.Add(2, first), Seq::Offer::kHeld);
  EXPECT_EQ(seq.Add(2, copy), Seq::Offer::kDuplicate);
  seq.Start(1);
  EXPECT_EQ(Drain(seq), (std::vector<std::string>{"first"}));
}

TEST(StreamResequencerTest, StartNeverGoesBack) {
  Seq seq;
  seq.Start(10);
  seq.Start(4);
  EXPECT_EQ(seq.last(), 10u);
  std::string old = "5";
  EXPECT_EQ(seq.Add(5, old), Seq::Offer::kDuplicate);
  std::string all = "x";
  seq.Add(12, all);
  EXPECT_EQ(seq.TakeAll().size(), 1u);
  EXPECT_EQ(seq.held(), 0u);
}

}  // namespace
}  // namespace trainscope::tier
