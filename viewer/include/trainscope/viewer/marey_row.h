// One horizontal axis of the Marey graph: a device, or one of a device
// group's three rows (its operators' minimum, average and maximum over the
// group's devices). MareyModel decides the rows; MareyLayout places them
// (axis_y) and draws them.
//
// Threading: a plain value.
#ifndef TRAINSCOPE_VIEWER_MAREY_ROW_H_
#define TRAINSCOPE_VIEWER_MAREY_ROW_H_

#include <cstdint>
#include <string>

namespace trainscope::viewer {

enum class MareyRowKind : uint8_t { kDevice, kGroupMin, kGroupAvg, kGroupMax };

struct MareyRow {
  MareyRowKind kind = MareyRowKind::kDevice;
  std::string label;
  std::string group_key;  // groups: "stage 0", "host node-1"
  uint32_t rank = 0;      // devices
  float axis_y = 0;
  bool has_alert = false;
  bool expanded = false;  // groups: members shown
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_ROW_H_
