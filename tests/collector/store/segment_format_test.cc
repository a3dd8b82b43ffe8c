#include "segment_format.h"

#include <gtest/gtest.h>

#include <string>

namespace trainscope::collector {
namespace {

std::string Frame(std::string_view payload) {
  std::string out;
  AppendFrame(payload, &out);
  return out;
}

TEST(SegmentFormatTest, HeaderRoundTrip) {
  const std::string header = EncodeSegmentHeader();
  ASSERT_EQ(header.size(), kSegmentHeaderBytes);
  EXPECT_EQ(header.substr(0, 8), std::string("TSLOG\0v1", 8));
  uint32_t version = 0;
  EXPECT_EQ(CheckSegmentHeader(header, &version), SegmentHeaderCheck::kValid);
  EXPECT_EQ(version, kSegmentFormatVersion);
}

TEST(SegmentFormatTest, HeaderProblems) {
  const std::string header = EncodeSegmentHeader();
  EXPECT_EQ(CheckSegmentHeader(header.substr(0, 15), nullptr), SegmentHeaderCheck::kTooShort);
  std::string bad_magic = header;
  bad_magic[0] = 'X';
  EXPECT_EQ(CheckSegmentHeader(bad_magic, nullptr), SegmentHeaderCheck::kBadMagic);
  std::string future = header;
  future[8] = 2;  // little-endian version 2
  uint32_t version = 0;
  EXPECT_EQ(CheckSegmentHeader(future, &version), SegmentHeaderCheck::kUnsupportedVersion);
  EXPECT_EQ(version, 2u);
}

TEST(SegmentFormatTest, FrameLayoutIsLittleEndian) {
  const std::string frame = Frame("abc");
  ASSERT_EQ(frame.size(), kFrameHeaderBytes + 3);
  EXPECT_EQ(static_cast<uint8_t>(frame[0]), kFrameMagic & 0xFFu);
  EXPECT_EQ(static_cast<uint8_t>(frame[3]), kFrameMagic >> 24);
  EXPECT_EQ(frame.substr(4, 4), std::string("\x03\0\0\0", 4));
  EXPECT_EQ(frame.substr(12), "abc");
}

TEST(SegmentFormatTest, FrameRoundTrip) {
  for (const std::string& payload : {std::string(), std::string("x"), std::string(10000, 'p')}) {
    const std::string frame = Frame(payload);
    const std::string buffer = frame + "trailing bytes";  // outlives the payload view
    const DecodedFrame decoded = DecodeFrame(buffer);
    ASSERT_EQ(decoded.status, FrameStatus::kOk) << decoded.problem;
    EXPECT_TRUE(decoded.payload == payload) << "payload of " << payload.size() << " bytes";
    EXPECT_EQ(decoded.frame_bytes, frame.size());
  }
}

TEST(SegmentFormatTest, EveryPrefixNeedsMore) {
  const std::string frame = Frame("payload of a record");
  for (size_t length = 0; length < frame.size(); ++length) {
    const DecodedFrame decoded = DecodeFrame(std::string_view(frame).substr(0, length));
    EXPECT_EQ(decoded.status, FrameStatus::kNeedsMore) << "prefix of " << length;
  }
}

TEST(SegmentFormatTest, EverySingleBitFlipIsRejected) {
  const std::string frame = Frame("payload of a record");
  for (size_t bit = 0; bit < frame.size() * 8; ++bit) {
    std::string damaged = frame;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    // A larger length reads as an incomplete frame; anything else as corrupt.
    EXPECT_NE(DecodeFrame(damaged).status, FrameStatus::kOk) << "bit " << bit;
  }
}

TEST(SegmentFormatTest, GarbageIsCorrupt) {
  EXPECT_EQ(DecodeFrame(std::string(12, '\0')).status, FrameStatus::kCorrupt);
  EXPECT_EQ(DecodeFrame("ab").status, FrameStatus::kCorrupt);  // not a magic prefix
  std::string huge = Frame("x");
  huge[4] = huge[5] = huge[6] = huge[7] = '\xFF';
  const DecodedFrame decoded = DecodeFrame(huge);
  EXPECT_EQ(decoded.status, FrameStatus::kCorrupt);
  EXPECT_NE(std::string(decoded.problem).find("maximum"), std::string::npos) << decoded.problem;
}

TEST(SegmentFormatTest, FileNames) {
  EXPECT_EQ(SegmentFileName(42), "segment-00000042.tslog");
  EXPECT_EQ(ParseSegmentFileName("segment-00000042.tslog"), 42u);
  EXPECT_EQ(ParseSegmentFileName(SegmentFileName(123456789)), 123456789u);
  for (const char* name :
       {"segment-42.tslog", "segment-0000004x.tslog", "segment-00000042.tslog.tmp", "LOCK",
        "segment-.tslog", "xsegment-00000042.tslog"}) {
    EXPECT_FALSE(ParseSegmentFileName(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace trainscope::collector
