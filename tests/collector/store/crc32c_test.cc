#include "crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace trainscope::collector {
namespace {

// Vectors from RFC 3720 (iSCSI), appendix B.4, and the classic check value.
TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, PortableMatchesKnownVector) {
  EXPECT_EQ(Crc32cExtendPortable(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, ExtendEqualsWholeAtEverySplit) {
  const std::string data = "The quick brown fox jumps over the lazy dog, twice over.";
  const uint32_t whole = Crc32c(data);
  for (size_t split = 0; split <= data.size(); ++split) {
    const uint32_t head = Crc32c(std::string_view(data).substr(0, split));
    EXPECT_EQ(Crc32cExtend(head, data.data() + split, data.size() - split), whole)
        << "split at " << split;
  }
}

TEST(Crc32cTest, HardwareMatchesPortableAtAnyAlignmentAndLength) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(42);
  std::string buffer(4096 + 16, '\0');
  for (char& c : buffer) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t length : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 65u, 1000u, 4096u}) {
      const char* p = buffer.data() + offset;
      EXPECT_EQ(Crc32cExtendHardware(0x12345678u, p, length),
                Crc32cExtendPortable(0x12345678u, p, length))
          << "offset " << offset << " length " << length;
    }
  }
}

TEST(Crc32cTest, DetectsSingleBitFlips) {
  std::string data(100, 'x');
  const uint32_t original = Crc32c(data);
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    std::string flipped = data;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_NE(Crc32c(flipped), original) << "bit " << bit;
  }
}

}  // namespace
}  // namespace trainscope::collector
