// The joins of the Marey graph: a band from an operator on one row to the
// same operator (same join key) on the row below, from its start and end
// on the upper axis to its start and end on the lower one, in its class's
// colour. What one row put on screen is collected as RowItems while it is
// laid out; joining two rows is then a hash lookup per operator.
//
// Rules: compute and collectives join only within a pipeline stage (other
// stages run other layers, whatever their operators are called), sends
// and receives across stages; across GPU streams only NCCL kernels join;
// merged density bins join bin to bin, only between adjacent rows, without
// antialiasing (they tile the gap side by side: smoothing their shared
// edges shows nothing and cost most of a whole-run frame).
//
// Usage:
//   MareyJoins::RowItems upper, lower;  // filled while laying out two rows
//   size_t joins = MareyJoins::Add(upper, lower, y_top, y_bottom, {.same_stage = true}, &list);
//
// Threading: stateless; Add only appends to `list`.
#ifndef TRAINSCOPE_VIEWER_MAREY_JOINS_H_
#define TRAINSCOPE_VIEWER_MAREY_JOINS_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "trainscope/viewer/draw_list.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct MareyJoins {
  // What a row put on screen, for joining it with the next row.
  struct RowItems {
    struct Item {
      uint64_t key;
      float x0;
      float x1;
      OpClass cls;
    };
    std::vector<Item> items;
    std::vector<std::pair<float, float>> merged;  // per bin: x0, x1; x1 < 0: not merged
  };

  struct Rules {
    bool same_stage = true;
    bool collectives_only = false;  // rows of two GPU streams
    bool merged_bins = true;        // adjacent rows: join merged bins too
  };

  // Adds the quads between `upper` (band bottom at y_top) and `lower` (band
  // top at y_bottom); none when the gap is under 2 px. Returns how many.
  static size_t Add(const RowItems& upper, const RowItems& lower, float y_top, float y_bottom,
                    const Rules& rules, DrawList* list);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_JOINS_H_
