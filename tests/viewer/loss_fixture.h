// A recorded-run-like loss-contribution job for the viewer's tests: a few
// ranks train on 8x8 grey "digits", each scoring its own shard of the data
// set and reporting, every K iterations, its top-N of the epoch with the
// contribution/reduction maps (8x8 "conv1", 4x4 "conv2", half floats) of its
// selected items that were in a batch since its last report — the
// LossReports a real rank's trainscope.LossContribution sends. A few items
// are "mislabeled" (prediction != label, always near the top); the rest of
// the top changes with the epochs. The reports go through a real
// LossTracker (Answer) or into a stored job log (WriteStoredJob) that the
// viewer opens like any other.
//
// Usage:
//   LossFixture fixture = MakeLossFixture({});
//   v1::LossAnswer answer = fixture.Answer(fixture.mislabeled[0]);
//   ASSERT_TRUE(fixture.WriteStoredJob(dir, "digits-lc").ok());
//   auto [x, y] = LossFixture::HotPixel(item, epoch, 8);  // where C peaks
//
// Threading: plain values.
#ifndef TRAINSCOPE_TESTS_VIEWER_LOSS_FIXTURE_H_
#define TRAINSCOPE_TESTS_VIEWER_LOSS_FIXTURE_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "trainscope/v1/loss.pb.h"

namespace trainscope::viewer::testing {

struct LossFixtureOptions {
  uint32_t ranks = 3;
  uint32_t epochs = 5;
  uint32_t items = 240;
  uint32_t top_n = 12;
  uint32_t iterations_per_epoch = 20;
  uint32_t report_every = 10;  // K
};

struct LossFixture {
  LossFixtureOptions options;
  std::vector<std::pair<uint32_t, trainscope::v1::LossReport>> reports;  // (rank, report)
  std::vector<uint64_t> mislabeled;  // always in the top, prediction != label

  // Through a real LossTracker, as the collector answers a LossQuery.
  trainscope::v1::LossAnswer Answer(std::optional<uint64_t> item) const;
  // A job log under data_dir/jobs/job (what a collector records).
  absl::Status WriteStoredJob(const std::filesystem::path& data_dir, const std::string& job) const;

  static int32_t Label(uint64_t item) { return static_cast<int32_t>(item % 10); }
  // The layer map's largest contribution value for `item` in `epoch`: its
  // position moves with the epoch, so the slider changes the picture.
  static std::pair<uint32_t, uint32_t> HotPixel(uint64_t item, uint32_t epoch, uint32_t side);
  // Its value (grows with the epochs for a mislabeled item).
  static float Peak(uint64_t item, uint32_t epoch);
};

LossFixture MakeLossFixture(const LossFixtureOptions& options);

// float -> IEEE half (round to nearest), for building maps.
uint16_t FloatToHalf(float value);
std::string EncodeHalfs(const std::vector<float>& values);

}  // namespace trainscope::viewer::testing

#endif  // TRAINSCOPE_TESTS_VIEWER_LOSS_FIXTURE_H_
