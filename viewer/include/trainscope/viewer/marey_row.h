// One horizontal axis of the Marey graph: a device's CPU operators, one of
// its GPU streams, or one of a device group's three rows (its operators'
// minimum, average and maximum over the group's devices). A device with GPU
// streams shows them as rows of their own under a thinner CPU row (weight);
// the rows of one device follow each other. MareyModel decides the rows;
// MareyLayout places them (top, height, axis_y) and draws them.
//
// Threading: a plain value.
#ifndef TRAINSCOPE_VIEWER_MAREY_ROW_H_
#define TRAINSCOPE_VIEWER_MAREY_ROW_H_

#include <cstdint>
#include <string>

namespace trainscope::viewer {

enum class MareyRowKind : uint8_t { kDevice, kGroupMin, kGroupAvg, kGroupMax };

// "min", "avg" or "max" for a group's rows; "" for a device's.
inline const char* MareyRowKindSuffix(MareyRowKind kind) {
  switch (kind) {
    case MareyRowKind::kGroupMin:
      return "min";
    case MareyRowKind::kGroupAvg:
      return "avg";
    case MareyRowKind::kGroupMax:
      return "max";
    case MareyRowKind::kDevice:
      break;
  }
  return "";
}

struct MareyRow {
  MareyRowKind kind = MareyRowKind::kDevice;
  std::string label;
  std::string group_key;  // groups: "stage 0", "host node-1"
  uint32_t rank = 0;      // devices
  bool gpu = false;       // a GPU stream's row (gpu_device, gpu_stream)
  uint32_t gpu_device = 0;
  uint32_t gpu_stream = 0;
  float weight = 1;  // share of the height relative to a full row
  float top = 0;     // set by MareyLayout
  float height = 0;
  float axis_y = 0;
  bool has_alert = false;
  bool expanded = false;  // groups: members shown
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_ROW_H_
