#include "trainscope/cli/formatting.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainscope::cli {
namespace {

TEST(FormattingTest, CountGroupsThousands) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(12345), "12,345");
  EXPECT_EQ(FormatCount(123456), "123,456");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatCount(18446744073709551615ull), "18,446,744,073,709,551,615");
}

TEST(FormattingTest, Rate) {
  EXPECT_EQ(FormatRate(0), "0/s");
  EXPECT_EQ(FormatRate(-3), "0/s");
  EXPECT_EQ(FormatRate(2.25), "2.2/s");
  EXPECT_EQ(FormatRate(1204.4), "1,204/s");
  EXPECT_EQ(FormatRate(1e300 * 1e300), "0/s");  // inf
}

TEST(FormattingTest, Bytes) {
  EXPECT_EQ(FormatBytes(12), "12 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(3ull << 30), "3.00 GiB");
}

TEST(FormattingTest, MsHasTwoDecimals) {
  EXPECT_EQ(FormatMs(1'234'567), "1.23");
  EXPECT_EQ(FormatMs(0), "0.00");
  EXPECT_EQ(FormatMs(-5'000'000), "-5.00");
}

TEST(FormattingTest, Ago) {
  const absl::Time now = absl::FromUnixSeconds(1'000'000);
  auto ns = [](int64_t seconds) { return seconds * 1'000'000'000; };
  EXPECT_EQ(FormatAgo(0, now), "never");
  EXPECT_EQ(FormatAgo(ns(1'000'000), now), "just now");
  EXPECT_EQ(FormatAgo(ns(1'000'010), now), "just now");  // clock skew: in the future
  EXPECT_EQ(FormatAgo(ns(1'000'000 - 4), now), "4s ago");
  EXPECT_EQ(FormatAgo(ns(1'000'000 - 125), now), "2m05s ago");
  EXPECT_EQ(FormatAgo(ns(1'000'000 - 3 * 3600 - 600), now), "3h10m ago");
  EXPECT_EQ(FormatAgo(ns(1'000'000 - 2 * 86400 - 3600), now), "2d01h ago");
}

TEST(FormattingTest, TimestampInTheGivenZone) {
  EXPECT_EQ(FormatTimestamp(0, absl::UTCTimeZone()), "-");
  EXPECT_EQ(FormatTimestamp(1'700'000'000'123'456'789, absl::UTCTimeZone()),
            "2023-11-14 22:13:20.123");
  EXPECT_EQ(FormatTimestamp(1'700'000'000'000'000'000, absl::FixedTimeZone(3600)),
            "2023-11-14 23:13:20.000");
}

TEST(FormattingTest, StateNames) {
  EXPECT_EQ(JobStateName(trainscope::v1::JOB_STATE_RUNNING), "running");
  EXPECT_EQ(JobStateName(trainscope::v1::JOB_STATE_IDLE), "idle");
  EXPECT_EQ(JobStateName(trainscope::v1::JOB_STATE_FINISHED), "finished");
  EXPECT_EQ(JobStateName(trainscope::v1::JOB_STATE_HALTED), "halted");
  EXPECT_EQ(JobStateName(trainscope::v1::JOB_STATE_LOST), "lost");
  EXPECT_EQ(JobStateName(trainscope::v1::JOB_STATE_UNSPECIFIED), "unknown");
}

TEST(FormattingTest, DropsNameTheCauses) {
  trainscope::v1::DropCounters drops;
  EXPECT_EQ(FormatDrops(drops), "0");
  drops.set_ring_full(10);
  drops.set_buffer_full(2);
  EXPECT_EQ(FormatDrops(drops), "12 (ring 10, buffer 2)");
  drops.set_shutdown(1000);
  EXPECT_EQ(FormatDrops(drops), "1,012 (ring 10, buffer 2, shutdown 1,000)");
  EXPECT_EQ(TotalDrops(drops), 1012u);
}

TEST(FormattingTest, QuoteEscapes) {
  EXPECT_EQ(Quote("too slow"), "\"too slow\"");
  EXPECT_EQ(Quote("a \"b\"\nc"), "\"a \\\"b\\\"\\nc\"");
}

TEST(FormattingTest, ShortClockDomainCutsTheBootId) {
  EXPECT_EQ(ShortClockDomain(""), "-");
  EXPECT_EQ(ShortClockDomain("monotonic@boot:3f1c0e7a-5d2b-4c8e-9a61-0b7d2e4f8c11"),
            "monotonic@boot:3f1c0e7a");
  EXPECT_EQ(ShortClockDomain("monotonic@boot:3f1c0e7a-5d2b-4c8e-9a61-0b7d2e4f8c11+test:5000:0"),
            "monotonic@boot:3f1c0e7a+test:5000:0");
  EXPECT_EQ(ShortClockDomain("host-1"), "host-1");
}

TEST(FormattingTest, DurationsInTheUnitThatSuitsThem) {
  EXPECT_EQ(FormatDuration(0), "0");
  EXPECT_EQ(FormatDuration(812), "812 ns");
  EXPECT_EQ(FormatDuration(-4'200), "-4.2 us");
  EXPECT_EQ(FormatDuration(37'012'345, /*plus_sign=*/true), "+37.012 ms");
  EXPECT_EQ(FormatDuration(-87'000'000, /*plus_sign=*/true), "-87.000 ms");
  EXPECT_EQ(FormatDuration(2.5e9), "2.500 s");
  EXPECT_EQ(FormatDuration(NAN), "?");
}

TEST(FormattingTest, ClockTableShowsOffsetsAgainstTheReferenceDeviceAndDomains) {
  trainscope::v1::ClockReport report;
  const std::string host_a = "monotonic@boot:3f1c0e7a-5d2b-4c8e-9a61-0b7d2e4f8c11";
  auto add = [&](uint32_t rank, const std::string& domain, uint32_t leader, int64_t relative,
                 trainscope::v1::ClockSource source) {
    trainscope::v1::ClockEstimate* c = report.add_devices();
    c->set_rank(rank);
    c->set_clock_domain(domain);
    c->set_domain_leader(leader);
    // Onto Unix time: epoch-sized, what the table printed before.
    c->set_offset_ns(1'700'000'000'000'000'000 + relative);
    c->set_offset_to_reference_device_ns(relative);
    c->set_drift_to_reference_device_ppm(relative == 0 ? 0 : 80);
    c->set_reference(rank == 0);
    c->set_source(source);
    c->set_collective_samples(30);
    c->set_uncertainty_ns(relative == 0 ? 0 : 12'345);
    return c;
  };
  add(0, host_a, 0, 0, trainscope::v1::CLOCK_SOURCE_PROBES);
  add(1, host_a, 0, 0, trainscope::v1::CLOCK_SOURCE_CLOCK_DOMAIN);
  add(2, host_a + "+test:37000000:80@5", 2, -37'000'123, trainscope::v1::CLOCK_SOURCE_COLLECTIVES);
  add(3, "", 3, 12'500'000, trainscope::v1::CLOCK_SOURCE_GPU_COLLECTIVES)
      ->set_gpu_collective_samples(64);
  // Four NCCL kernel ends: an offset, no drift.
  trainscope::v1::ClockEstimate* few =
      add(4, "trace@host:b", 4, 412, trainscope::v1::CLOCK_SOURCE_GPU_COLLECTIVES);
  few->set_gpu_collective_samples(4);
  few->set_drift_to_reference_device_ppm(0);
  few->set_insufficient_evidence(true);
  trainscope::v1::ClockEstimate* none =
      add(5, "trace@host:c", 5, 0, trainscope::v1::CLOCK_SOURCE_NOMINAL);
  none->set_insufficient_evidence(true);
  none->set_uncertainty_ns(1'414'214);
  const std::string table = FormatClockTable(report);
  EXPECT_EQ(table,
            "Against rank 0's clock (the reference): OFFSET is its clock minus the device's, "
            "DRIFT how much faster it runs.\n"
            "RANK  DOMAIN                                          OFFSET       DRIFT  "
            "UNCERTAINTY  SOURCE                GPU_COLL  CPU_COLL  PROBES  JUMPS  EVIDENCE\n"
            "   0  monotonic@boot:3f1c0e7a                              0           0  "
            "      exact  reference                    0        30       0      0  reference\n"
            "   1  monotonic@boot:3f1c0e7a                              0           0  "
            "      exact  same clock as rank 0         0        30       0      0\n"
            "   2  monotonic@boot:3f1c0e7a+test:37000000:80@5  -37.000 ms  +80.00 ppm  "
            " +/-12.3 us  collectives                  0        30       0      0\n"
            "   3  -                                           +12.500 ms  +80.00 ppm  "
            " +/-12.3 us  gpu collectives             64        30       0      0\n"
            "   4  trace@host:b                                   +412 ns           -  "
            " +/-12.3 us  gpu collectives              4        30       0      0  "
            "insufficient evidence\n"
            "   5  trace@host:c                                         0           -  "
            "+/-1.414 ms  own wall clock               0        30       0      0  "
            "insufficient evidence\n")
      << table;
  EXPECT_EQ(table.find("1700000"), std::string::npos) << table;
}

}  // namespace
}  // namespace trainscope::cli
