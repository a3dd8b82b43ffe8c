#include "segment_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "segment_format.h"
#include "store_test_util.h"

namespace trainscope::collector {
namespace {

using testing::MakeBatch;

struct Built {
  std::string bytes;
  std::vector<size_t> offsets;  // where each record's frame starts
};

Built BuildSegment(int records) {
  Built built{EncodeSegmentHeader(), {}};
  for (int i = 0; i < records; ++i) {
    built.offsets.push_back(built.bytes.size());
    AppendFrame(MakeBatch(0, 1, static_cast<uint64_t>(i + 1), 3).SerializeAsString(), &built.bytes);
  }
  return built;
}

std::vector<uint64_t> Sequences(std::string_view bytes, SegmentScan* scan) {
  std::vector<uint64_t> sequences;
  *scan = ScanSegmentBytes(bytes, [&](const v1::LogRecord& record) {
    sequences.push_back(record.batch().batch().sequence());
    return true;
  });
  return sequences;
}

TEST(SegmentScannerTest, CleanSegment) {
  const Built built = BuildSegment(5);
  SegmentScan scan;
  EXPECT_EQ(Sequences(built.bytes, &scan), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(scan.header_valid);
  EXPECT_EQ(scan.records, 5u);
  EXPECT_EQ(scan.valid_end, built.bytes.size());
  EXPECT_EQ(scan.tail_bytes, 0u);
  EXPECT_TRUE(scan.damage.empty());
}

TEST(SegmentScannerTest, GarbageBetweenFramesIsOneDamagedRange) {
  Built built = BuildSegment(4);
  const size_t at = built.offsets[2];
  built.bytes.insert(at, std::string(100, '\x5A'));
  SegmentScan scan;
  EXPECT_EQ(Sequences(built.bytes, &scan), (std::vector<uint64_t>{1, 2, 3, 4}));
  ASSERT_EQ(scan.damage.size(), 1u);
  EXPECT_EQ(scan.damage[0].offset, at);
  EXPECT_EQ(scan.damage[0].length, 100u);
  EXPECT_EQ(scan.tail_bytes, 0u);
}

TEST(SegmentScannerTest, TwoDamagedFramesAreTwoRanges) {
  Built built = BuildSegment(6);
  built.bytes[built.offsets[1] + kFrameHeaderBytes + 2] ^= 0x01;
  built.bytes[built.offsets[4] + kFrameHeaderBytes + 2] ^= 0x01;
  SegmentScan scan;
  EXPECT_EQ(Sequences(built.bytes, &scan), (std::vector<uint64_t>{1, 3, 4, 6}));
  ASSERT_EQ(scan.damage.size(), 2u);
  EXPECT_EQ(scan.damage[0].offset, built.offsets[1]);
  EXPECT_EQ(scan.damage[0].length, built.offsets[2] - built.offsets[1]);
  EXPECT_EQ(scan.damage[1].offset, built.offsets[4]);
}

TEST(SegmentScannerTest, UnreadableEndIsTailNotDamage) {
  Built built = BuildSegment(3);
  const size_t end = built.bytes.size();
  built.bytes += std::string(40, '\0');  // blocks allocated but never written
  SegmentScan scan;
  EXPECT_EQ(Sequences(built.bytes, &scan).size(), 3u);
  EXPECT_TRUE(scan.damage.empty());
  EXPECT_EQ(scan.valid_end, end);
  EXPECT_EQ(scan.tail_bytes, 40u);
}

TEST(SegmentScannerTest, BadHeaderStillYieldsRecords) {
  Built built = BuildSegment(2);
  built.bytes[0] = 'X';
  SegmentScan scan;
  EXPECT_EQ(Sequences(built.bytes, &scan), (std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(scan.header_valid);
  ASSERT_EQ(scan.damage.size(), 1u);
  EXPECT_EQ(scan.damage[0].offset, 0u);
  EXPECT_EQ(scan.damage[0].length, kSegmentHeaderBytes);
}

TEST(SegmentScannerTest, ValidFrameWithNonProtobufPayloadIsSkippedWhole) {
  Built built = BuildSegment(1);
  const size_t bad_at = built.bytes.size();
  AppendFrame(std::string("\xFF\xFF\xFF", 3), &built.bytes);  // invalid tag/varint
  AppendFrame(MakeBatch(0, 1, 9, 1).SerializeAsString(), &built.bytes);
  SegmentScan scan;
  EXPECT_EQ(Sequences(built.bytes, &scan), (std::vector<uint64_t>{1, 9}));
  ASSERT_EQ(scan.damage.size(), 1u);
  EXPECT_EQ(scan.damage[0].offset, bad_at);
  EXPECT_EQ(scan.damage[0].length, kFrameHeaderBytes + 3);
}

TEST(SegmentScannerTest, StopsWhenCallbackSaysSo) {
  const Built built = BuildSegment(5);
  int seen = 0;
  const SegmentScan scan =
      ScanSegmentBytes(built.bytes, [&](const v1::LogRecord&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
  EXPECT_TRUE(scan.stopped);
}

TEST(SegmentScannerTest, ShortHeaderIsAllTail) {
  const SegmentScan scan = ScanSegmentBytes("TSLOG", nullptr);
  EXPECT_EQ(scan.valid_end, 0u);
  EXPECT_EQ(scan.tail_bytes, 5u);
}

}  // namespace
}  // namespace trainscope::collector
