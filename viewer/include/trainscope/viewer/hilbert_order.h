// The order of the Hilbert ring's devices (issue 24.4): along a Hilbert
// curve over their mesh or torus coordinates when every device has them, so
// devices close in the machine stay close on the ring; else the order given
// (the hierarchy's rack, host, rank order). Pure: plain structs in and out,
// no model, so the ordering rule is tested apart from drawing.
//
// Usage:
//   std::vector<HilbertOrder::Device> devices = {{0, {{0, 0}}}, {1, {{0, 1}}}};
//   HilbertOrder::Result r = HilbertOrder::Sort(devices);
//   // r.order: the devices' ids in ring order; r.uses_coordinates
//
// Threading: stateless; safe from any thread.
#ifndef TRAINSCOPE_VIEWER_HILBERT_ORDER_H_
#define TRAINSCOPE_VIEWER_HILBERT_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace trainscope::viewer {

// The distance along a Hilbert curve filling a 2^bits x 2^bits grid of the
// point (x, y) (each < 2^bits).
uint64_t HilbertIndex(uint32_t bits, uint32_t x, uint32_t y);

class HilbertOrder {
 public:
  struct Device {
    size_t id = 0;                                    // the caller's (the ring: a matrix index)
    std::optional<std::pair<uint32_t, uint32_t>> at;  // (x, y) in the mesh, if known
  };
  struct Result {
    std::vector<size_t> order;      // ids, in ring order
    bool uses_coordinates = false;  // false: the order given
  };

  // Stable: devices on one grid point keep the order given. Coordinates are
  // used only when every device has them (one without would have no place).
  static Result Sort(const std::vector<Device>& devices);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_HILBERT_ORDER_H_
