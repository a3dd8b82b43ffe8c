#include "loss_fixture.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::viewer::testing {
namespace {

// A 3x5 bitmap font, one row per 3 bits: the thumbnails look like digits.
constexpr uint8_t kFont[10][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
    {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 2, 2, 2}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

// Deterministic noise in [0, 1) per (item, epoch).
double Noise(uint64_t item, uint32_t epoch) {
  uint64_t x = item * 0x9E3779B97F4A7C15ull + epoch * 0xBF58476D1CE4E5B9ull + 1;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 53);
}

bool IsMislabeled(uint64_t item) { return item == 7 || item == 42 || item == 99 || item == 151; }
// Predicted right but always near the top: a candidate by its streak alone.
constexpr uint64_t kAmbiguous = 120;

double Score(uint64_t item, uint32_t epoch) {
  if (IsMislabeled(item)) return 3.0 + 0.002 * static_cast<double>(item) + 0.1 * epoch;
  if (item == kAmbiguous) return 2.0;
  return Noise(item, epoch);
}

int32_t Prediction(uint64_t item) {
  const int32_t label = LossFixture::Label(item);
  return IsMislabeled(item) ? (label + 3) % 10 : label;
}

uint64_t BatchIteration(uint64_t item, uint32_t epoch, const LossFixtureOptions& o) {
  return uint64_t{epoch} * o.iterations_per_epoch + 1 +
         ((item / o.ranks) * 7 + epoch) % o.iterations_per_epoch;
}

v1::Thumbnail Digit(uint64_t item) {
  v1::Thumbnail t;
  t.set_height(8);
  t.set_width(8);
  t.set_channels(1);
  std::string pixels(64, '\0');
  const auto& glyph = kFont[LossFixture::Label(item)];
  for (int y = 1; y < 7; ++y) {
    const int fy = (y - 1) * 5 / 6;
    for (int x = 1; x < 7; ++x) {
      const int fx = (x - 1) / 2;
      const bool on = (glyph[fy] >> (2 - fx)) & 1;
      pixels[y * 8 + x] = static_cast<char>(on ? 230 + (item % 3) * 10 : 20);
    }
  }
  t.set_pixels(pixels);
  return t;
}

v1::LayerMap Map(const std::string& layer, uint64_t item, uint32_t epoch, uint32_t side,
                 float scale) {
  const auto [hx, hy] = LossFixture::HotPixel(item, epoch, side);
  const float peak = LossFixture::Peak(item, epoch) * scale;
  std::vector<float> c, r;
  for (uint32_t y = 0; y < side; ++y) {
    for (uint32_t x = 0; x < side; ++x) {
      const float dc = std::pow(float(x) - float(hx), 2.0f) + std::pow(float(y) - float(hy), 2.0f);
      const float dr = std::pow(float(x) - float(side - 1 - hx), 2.0f) +
                       std::pow(float(y) - float(side - 1 - hy), 2.0f);
      c.push_back(peak * std::exp(-dc / 2.5f));
      r.push_back(0.4f * peak * std::exp(-dr / 3.0f));
    }
  }
  v1::LayerMap map;
  map.set_layer(layer);
  map.set_height(side);
  map.set_width(side);
  map.set_contribution(EncodeHalfs(c));
  map.set_reduction(EncodeHalfs(r));
  return map;
}

}  // namespace

std::pair<uint32_t, uint32_t> LossFixture::HotPixel(uint64_t item, uint32_t epoch, uint32_t side) {
  return {static_cast<uint32_t>((item + 3 * epoch) % side),
          static_cast<uint32_t>((item * 5 + epoch) % side)};
}

float LossFixture::Peak(uint64_t item, uint32_t epoch) {
  if (IsMislabeled(item)) return 0.8f + 0.3f * static_cast<float>(epoch);
  return 0.3f + 0.5f * static_cast<float>(Noise(item, epoch + 100));
}

LossFixture MakeLossFixture(const LossFixtureOptions& options) {
  LossFixture fixture;
  fixture.options = options;
  for (uint64_t item : {7, 42, 99, 151}) {
    if (item < options.items) fixture.mislabeled.push_back(item);
  }
  const uint32_t k = options.report_every;
  for (uint32_t epoch = 0; epoch < options.epochs; ++epoch) {
    const uint64_t first = uint64_t{epoch} * options.iterations_per_epoch;
    for (uint64_t it = first + k; it <= first + options.iterations_per_epoch; it += k) {
      const bool complete = it == first + options.iterations_per_epoch;
      for (uint32_t rank = 0; rank < options.ranks; ++rank) {
        // The rank's items measured so far this epoch, highest first.
        std::vector<uint64_t> seen;
        for (uint64_t item = rank; item < options.items; item += options.ranks) {
          if (BatchIteration(item, epoch, options) <= it) seen.push_back(item);
        }
        std::sort(seen.begin(), seen.end(),
                  [&](uint64_t a, uint64_t b) { return Score(a, epoch) > Score(b, epoch); });
        if (seen.size() > options.top_n) seen.resize(options.top_n);
        v1::LossReport report;
        report.set_epoch(epoch);
        report.set_iteration(it);
        report.set_epoch_complete(complete);
        report.set_selection_layer("fc1");
        report.add_monitored_layers("conv1");
        report.add_monitored_layers("conv2");
        report.set_top_n(options.top_n);
        for (uint64_t item : seen) {
          v1::ItemScore* score = report.add_top();
          score->set_item(item);
          score->set_contribution(Score(item, epoch));
          score->set_label(LossFixture::Label(item));
          score->set_prediction(Prediction(item));
          score->set_iteration(it);
          // The maps of the selected items that were in a batch since the
          // last report.
          const uint64_t batch = BatchIteration(item, epoch, options);
          if (batch + k <= it) continue;
          v1::ItemSnapshot* s = report.add_snapshots();
          s->set_item(item);
          s->set_epoch(epoch);
          s->set_iteration(batch);
          s->set_label(LossFixture::Label(item));
          s->set_prediction(Prediction(item));
          s->set_contribution(Score(item, epoch));
          *s->mutable_input() = Digit(item);
          *s->add_maps() = Map("conv1", item, epoch, 8, 1.0f);
          *s->add_maps() = Map("conv2", item, epoch, 4, 0.6f);
        }
        fixture.reports.emplace_back(rank, std::move(report));
      }
    }
  }
  return fixture;
}

v1::LossAnswer LossFixture::Answer(std::optional<uint64_t> item) const {
  collector::LossTracker tracker;
  for (uint32_t rank = 0; rank < options.ranks; ++rank) tracker.OnRankJoined(rank);
  for (const auto& [rank, report] : reports) tracker.OnReport(rank, report);
  v1::LossQuery query;
  query.set_want_item(item.has_value());
  query.set_item(item.value_or(0));
  return tracker.Answer(query);
}

absl::Status LossFixture::WriteStoredJob(const std::filesystem::path& data_dir,
                                         const std::string& job) const {
  collector::JobLog::Options log_options;
  log_options.dir = data_dir / "jobs" / job;
  log_options.fsync = false;
  auto log = collector::JobLog::Open(log_options, nullptr);
  if (!log.ok()) return log.status();
  int64_t now = 1'700'000'000'000'000'000;
  for (uint32_t rank = 0; rank < options.ranks; ++rank) {
    v1::LogRecord record;
    record.set_logged_unix_ns(now);
    v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
    hello->set_job_id(job);
    hello->set_rank(rank);
    hello->set_world_size(options.ranks);
    hello->set_host("node-" + std::to_string(rank / 2));
    hello->set_agent_instance_id(100 + rank);
    if (absl::Status s = (*log)->Append(record); !s.ok()) return s;
  }
  std::vector<uint64_t> sequence(options.ranks, 0);
  for (const auto& [rank, report] : reports) {
    v1::LogRecord record;
    now += 10'000'000;
    record.set_logged_unix_ns(now);
    v1::StreamBatch* batch = record.mutable_batch();
    batch->set_rank(rank);
    batch->set_agent_instance_id(100 + rank);
    batch->mutable_batch()->set_sequence(++sequence[rank]);
    *batch->mutable_batch()->add_loss_reports() = report;
    if (absl::Status s = (*log)->Append(record); !s.ok()) return s;
  }
  return (*log)->Sync();
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7E00u;
  if (magnitude >= 65520.0f) return sign | 0x7C00u;  // rounds to infinity
  if (magnitude < 6.103515625e-05f) {                // subnormal: units of 2^-24
    return sign | static_cast<uint16_t>(std::lround(std::ldexp(magnitude, 24)));
  }
  int exponent = 0;
  const float fraction = std::frexp(magnitude, &exponent);  // [0.5, 1)
  long mantissa = std::lround((fraction * 2 - 1) * 1024);
  int biased = exponent - 1 + 15;
  if (mantissa == 1024) {
    mantissa = 0;
    ++biased;
  }
  return sign | static_cast<uint16_t>((biased << 10) | mantissa);
}

std::string EncodeHalfs(const std::vector<float>& values) {
  std::string bytes;
  for (float v : values) {
    const uint16_t h = FloatToHalf(v);
    bytes.push_back(static_cast<char>(h & 0xFF));
    bytes.push_back(static_cast<char>(h >> 8));
  }
  return bytes;
}

}  // namespace trainscope::viewer::testing
