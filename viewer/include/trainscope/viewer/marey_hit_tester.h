// Answers "what is under the pointer?" for one laid-out Marey frame, from
// the data rather than from pixels: the operator under (x, y) (the shortest
// one that covers x within 3 px, communication before compute), the merged
// density bin a zoomed-out row shows there, the alert cross at the start of
// an axis, a row's label (a device's stage and host, a group's ranks) or the
// row's cells of the FLOPs / FLOP/s / peak-memory pixel map. Each hit carries
// the tooltip text.
//
// It owns nothing: MareyModel lays the frame out (rows, tracks, groups,
// MareyLayout's row positions and merged bins) and hands the tester a Scene
// of pointers to it; the Scene is valid until the model changes.
//
// Usage:
//   MareyHitTester::Scene scene{.names = &names, .store = &store, ...};
//   std::optional<MareyHitTester::Hit> hit = MareyHitTester::HitTest(scene, x, y);
//
// Threading: stateless; HitTest only reads the Scene, so it runs on the
// thread that owns the model (the UI thread) while nothing modifies it.
#ifndef TRAINSCOPE_VIEWER_MAREY_HIT_TESTER_H_
#define TRAINSCOPE_VIEWER_MAREY_HIT_TESTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/marey_group.h"
#include "trainscope/viewer/marey_layout.h"
#include "trainscope/viewer/marey_row.h"
#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/marey_track_store.h"
#include "trainscope/viewer/marey_view.h"
#include "trainscope/viewer/name_table.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyHitTester {
 public:
  struct Hit {
    enum class Kind : uint8_t { kOperator, kMergedBin, kAlert, kRowLabel, kPixelMap };
    Kind kind = Kind::kOperator;
    size_t row = 0;
    std::string row_label;
    std::string group_key;
    std::string op;  // operator name
    OpClass op_class = OpClass::kCompute;
    int64_t start_ns = 0;  // on the displayed clock
    int64_t duration_ns = 0;
    uint64_t step = 0;
    uint32_t merged_operators = 0;  // kMergedBin
    int64_t busy_ns = 0;            // kMergedBin
    std::string text;               // the tooltip
  };

  // One laid-out frame; every pointer is non-null and the vectors are per
  // row (rows, tracks and step_values have the same size).
  struct Scene {
    const NameTable* names = nullptr;
    const MareyTrackStore* store = nullptr;
    const MareyView* view = nullptr;      // the frame's visible range and plot
    const MareyLayout* layout = nullptr;  // the frame's row positions and merged bins
    const std::vector<MareyRow>* rows = nullptr;
    const std::vector<const MareyTrack*>* tracks = nullptr;
    const std::map<std::string, std::unique_ptr<MareyGroup>>* groups = nullptr;
    // Per row: its devices' values in the selected step (else the newest).
    const std::vector<std::vector<const DeviceStepRecord*>>* step_values = nullptr;
    uint32_t bins = 1;      // density bins over the visible range
    int64_t origin_ns = 0;  // the job's first operator on the displayed clock
  };

  // Nothing when (x, y) is outside the rows, between the axes' labels and
  // the plot, or over an empty stretch of an axis.
  static std::optional<Hit> HitTest(const Scene& scene, float x, float y);

 private:
  static std::string DescribeRowAlerts(const Scene& scene, size_t index);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_HIT_TESTER_H_
