#include "trainscope/base/number_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trainscope::base {
namespace {

TEST(NumberFormatTest, SignificantDigits) {
  EXPECT_EQ(FormatSignificant(1.2345, 3), "1.23");
  EXPECT_EQ(FormatSignificant(12.345, 3), "12.3");
  EXPECT_EQ(FormatSignificant(123.45, 3), "123");
  EXPECT_EQ(FormatSignificant(12345, 3), "12300");
  EXPECT_EQ(FormatSignificant(0.012345, 3), "0.0123");
  EXPECT_EQ(FormatSignificant(-1.5, 3), "-1.50");
  EXPECT_EQ(FormatSignificant(-1.5, 3, /*trim_zeros=*/true), "-1.5");
  EXPECT_EQ(FormatSignificant(2.0, 3, /*trim_zeros=*/true), "2");
  EXPECT_EQ(FormatSignificant(0, 3), "0");
  EXPECT_EQ(FormatSignificant(std::nan(""), 3), "?");
}

TEST(NumberFormatTest, DurationsTakeTheUnitThatSuitsTheirSize) {
  EXPECT_EQ(FormatDuration(12), "12.0 ns");
  EXPECT_EQ(FormatDuration(850), "850 ns");
  EXPECT_EQ(FormatDuration(12'500), "12.5 us");
  EXPECT_EQ(FormatDuration(350e3), "350 us");
  EXPECT_EQ(FormatDuration(1'250'000), "1.25 ms");
  EXPECT_EQ(FormatDuration(41e6), "41.0 ms");
  EXPECT_EQ(FormatDuration(-3e6), "-3.00 ms");
  EXPECT_EQ(FormatDuration(3.2e9), "3.20 s");
  EXPECT_EQ(FormatDuration(3.6e12), "3600 s");  // seconds stay seconds
  EXPECT_EQ(FormatDuration(0), "0");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "?");
}

TEST(NumberFormatTest, AFigureThatRoundsUpTakesTheNextUnit) {
  EXPECT_EQ(FormatDuration(999'960), "1.00 ms");
  EXPECT_EQ(FormatDuration(999'400), "999 us");
  EXPECT_EQ(FormatBytes(1023.9 * 1024), "1020 KiB");
  EXPECT_EQ(FormatBytes(1023.96 * 1024, {.significant = 4}), "1.000 MiB");
  EXPECT_EQ(FormatBytes(1023.6), "1.00 KiB");
}

TEST(NumberFormatTest, DurationStyles) {
  EXPECT_EQ(FormatDuration(12'500, {.micro = "\xC2\xB5s"}), "12.5 \xC2\xB5s");
  EXPECT_EQ(FormatDuration(2e6, {.plus_sign = true}), "+2.00 ms");
  EXPECT_EQ(FormatDuration(-2e6, {.plus_sign = true}), "-2.00 ms");
  const FigureStyle clocks = {.significant = 5, .trim_zeros = true, .plus_sign = true};
  EXPECT_EQ(FormatDuration(37'012'345, clocks), "+37.012 ms");
  EXPECT_EQ(FormatDuration(-87'000'000, clocks), "-87 ms");
  EXPECT_EQ(FormatDuration(-4'200, clocks), "-4.2 us");
  EXPECT_EQ(FormatDuration(812, clocks), "+812 ns");
}

TEST(NumberFormatTest, BytesTakeBinaryPrefixesAndWholeBytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(12), "12 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(3.0 * (1ull << 30)), "3.00 GiB");
  EXPECT_EQ(FormatBytes(5.0 * (1ull << 50)), "5.00 PiB");
  EXPECT_EQ(FormatBytes(1536, {.trim_zeros = true}), "1.5 KiB");
}

TEST(NumberFormatTest, SiPrefixes) {
  EXPECT_EQ(FormatSi(2.5e12, "FLOPS"), "2.50 TFLOPS");
  EXPECT_EQ(FormatSi(1.2e9, "FLOPS"), "1.20 GFLOPS");
  EXPECT_EQ(FormatSi(3e6, "B/s"), "3.00 MB/s");
  EXPECT_EQ(FormatSi(1500, "B/s"), "1.50 kB/s");
  EXPECT_EQ(FormatSi(800, "B/s"), "800 B/s");
  EXPECT_EQ(FormatSi(0, "FLOPS"), "0 FLOPS");
  EXPECT_EQ(FormatSi(3e15, "FLOP/s"), "3.00 PFLOP/s");
  // Counts: no separator, whole below 1000.
  const FigureStyle count = {.separator = ""};
  EXPECT_EQ(FormatSi(2.5e12, "", count, /*whole=*/true), "2.50T");
  EXPECT_EQ(FormatSi(999, "", count, /*whole=*/true), "999");
  EXPECT_EQ(FormatSi(5, "", count, /*whole=*/true), "5");
  EXPECT_EQ(FormatSi(5, "FLOPS"), "5.00 FLOPS");
}

TEST(NumberFormatTest, ThousandsSeparators) {
  EXPECT_EQ(FormatThousands(0), "0");
  EXPECT_EQ(FormatThousands(999), "999");
  EXPECT_EQ(FormatThousands(1000), "1,000");
  EXPECT_EQ(FormatThousands(123456), "123,456");
  EXPECT_EQ(FormatThousands(18446744073709551615ull), "18,446,744,073,709,551,615");
}

}  // namespace
}  // namespace trainscope::base
