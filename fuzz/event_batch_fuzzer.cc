// libFuzzer target for what a collector decodes from an agent's stream: an
// EventBatch, checked by BatchValidator (events and loss-contribution
// reports); the reports of a batch that passes go through a LossTracker, as
// the live analysis would. Checks invariants rather than just "no crash":
//   - the job-wide list is never longer than the largest top_n reported;
//   - it is sorted by contribution, highest first;
//   - every snapshot the tracker hands back carries the reporting rank;
//   - every item of a closed epoch's top-N keeps its record (its streak counts).
//
//   cmake ... -DTRAINSCOPE_BUILD_FUZZERS=ON && ./bin/event_batch_fuzzer -max_total_time=30
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>

#include "google/protobuf/stubs/logging.h"
#include "trainscope/collector/analysis/loss_tracker.h"
#include "trainscope/collector/ingest/batch_validator.h"
#include "trainscope/v1/agent.pb.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trainscope::v1::EventBatch batch;
  if (!batch.ParseFromArray(data, static_cast<int>(size))) return 0;
  constexpr uint32_t kRank = 1;
  trainscope::collector::BatchValidator validator(/*world_size=*/4);
  if (!validator.Validate(batch).ok()) return 0;

  // Tiny bounds, so that every eviction path runs under ASan.
  trainscope::collector::LossTrackerOptions options;
  options.max_snapshots_per_item = 2;
  options.max_items_with_snapshots = 2;
  options.max_thumbnails = 2;
  options.max_history_epochs = 2;
  options.max_items = 3;
  trainscope::collector::LossTracker tracker(options);
  tracker.OnRankJoined(kRank);
  uint32_t top_n = 0;
  std::optional<uint32_t> previous_epoch;  // the last closed epoch and its top-N
  std::set<uint64_t> previous_top;
  for (const trainscope::v1::LossReport& report : batch.loss_reports()) {
    top_n = std::max(top_n, report.top_n());
    const auto changes = tracker.OnReport(kRank, report);
    for (const auto& snapshot : changes.snapshots) Check(snapshot.rank() == kRank);
    for (const auto& closed : changes.closed) {
      std::set<uint64_t> now;
      for (const auto& item : closed.items) {
        now.insert(item.score.item());
        const bool again = previous_epoch.has_value() && *previous_epoch + 1 == closed.epoch &&
                           previous_top.count(item.score.item()) > 0;
        Check(item.epochs_in_top >= (again ? 2u : 1u));
      }
      previous_epoch = closed.epoch;
      previous_top = std::move(now);
    }
  }
  tracker.OnRankGone(kRank);
  const trainscope::v1::LossState state = tracker.State();
  Check(static_cast<uint32_t>(state.items_size()) <= top_n);
  for (int i = 1; i < state.items_size(); ++i) {
    Check(state.items(i - 1).contribution() >= state.items(i).contribution());
  }
  trainscope::v1::LossQuery query;
  query.set_want_item(true);
  if (state.items_size() > 0) query.set_item(state.items(0).item());
  (void)tracker.Answer(query);
  return 0;
}
