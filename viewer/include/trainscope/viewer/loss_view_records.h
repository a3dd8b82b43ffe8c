// What the loss-contribution model (LossModel) hands the layouts of its two
// views: the Selection View's cells and the Monitoring View's frame (the
// chosen item at the slider, one column per monitored layer), and where the
// layouts put them.
//
// Threading: plain values.
#ifndef TRAINSCOPE_VIEWER_LOSS_VIEW_RECORDS_H_
#define TRAINSCOPE_VIEWER_LOSS_VIEW_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

// One cell of the Selection View.
struct LossCell {
  uint64_t item = 0;
  uint32_t place = 0;  // 1-based, in contribution order
  double contribution = 0;
  int32_t label = -1;
  int32_t prediction = -1;
  uint32_t rank = 0;
  uint32_t epochs_in_top = 0;
  uint32_t snapshots = 0;
  bool misclassified = false;  // label and prediction known and different
  bool candidate = false;      // misclassified or epochs_in_top >= candidate_epochs
  bool chosen = false;         // shown in the Monitoring View
  ThumbnailRecord input;
  std::vector<EpochScoreRecord> history;
  // Set by LossSelectionLayout.
  RectF rect;
  RectF thumb_rect;
};

// One monitored layer in the Monitoring View.
struct LossColumn {
  std::string layer;
  uint32_t height = 0;
  uint32_t width = 0;
  bool present = false;  // this snapshot has a well-formed map for the layer
  std::vector<float> contribution;
  std::vector<float> reduction;
  float contribution_max = 0;
  float reduction_max = 0;
  // Set by LossMonitoringLayout.
  RectF contribution_rect;
  RectF reduction_rect;
};

// What the Monitoring View shows for the chosen item at the slider.
// How the Monitoring View's maps are coloured (issue 23.5: maps blank when
// an iteration's values are tiny next to the item's largest):
//   kPerIteration: linear on [0, this iteration's max] (the default: every
//                  iteration shows its structure);
//   kShared: linear on [0, the max over every snapshot] (comparable across
//            iterations);
//   kLog: log over kLogDecades decades below the max over every snapshot
//         (both: small and large iterations show structure, comparably).
enum class MapScaling : uint8_t { kPerIteration, kShared, kLog };
constexpr float kLogDecades = 4;
const char* MapScalingName(MapScaling scaling);  // "per-iteration", "shared", "log"

struct LossFrame {
  uint64_t item = 0;
  std::optional<uint32_t> place;  // in the current list, 1-based
  size_t index = 0;               // slider position, 0 = oldest snapshot
  size_t count = 0;               // snapshots of the item; 0: none yet
  uint32_t epoch = 0;
  uint64_t iteration = 0;
  uint32_t rank = 0;
  int32_t label = -1;
  int32_t prediction = -1;
  double contribution = 0;
  ThumbnailRecord input;
  std::vector<LossColumn> columns;
  float scale_max = 0;  // the colour scale's top (by `scaling`)
  float frame_max = 0;  // the largest value at this iteration
  MapScaling scaling = MapScaling::kPerIteration;
};

// Where LossMonitoringLayout put things (for tests and hit tests).
struct LossMonitoringGeometry {
  RectF input_rect;
  RectF colorbar_contribution;
  RectF colorbar_reduction;
  std::vector<LossColumn> columns;  // with their rects
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_LOSS_VIEW_RECORDS_H_
