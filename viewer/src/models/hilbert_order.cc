#include "trainscope/viewer/hilbert_order.h"

#include <algorithm>

namespace trainscope::viewer {

uint64_t HilbertIndex(uint32_t bits, uint32_t x, uint32_t y) {
  // The classic xy -> d conversion: at each scale, which quadrant, then
  // rotate/flip the rest so the sub-curve is in standard orientation.
  const uint64_t n = uint64_t{1} << bits;
  uint64_t d = 0;
  uint64_t px = x, py = y;
  for (uint64_t s = n / 2; s > 0; s /= 2) {
    const uint64_t rx = (px & s) > 0 ? 1 : 0;
    const uint64_t ry = (py & s) > 0 ? 1 : 0;
    d += s * s * ((3 * rx) ^ ry);
    if (ry == 0) {
      if (rx == 1) {
        px = n - 1 - px;
        py = n - 1 - py;
      }
      std::swap(px, py);
    }
  }
  return d;
}

HilbertOrder::Result HilbertOrder::Sort(const std::vector<Device>& devices) {
  Result result;
  std::vector<const Device*> sorted;
  sorted.reserve(devices.size());
  for (const Device& d : devices) sorted.push_back(&d);
  result.uses_coordinates = !devices.empty() && std::all_of(devices.begin(), devices.end(),
                                                            [](const Device& d) { return d.at; });
  if (result.uses_coordinates) {
    uint32_t extent = 1;
    for (const Device& d : devices) extent = std::max({extent, d.at->first + 1, d.at->second + 1});
    uint32_t bits = 0;
    while ((uint64_t{1} << bits) < extent) ++bits;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const Device* a, const Device* b) {
      return HilbertIndex(bits, a->at->first, a->at->second) <
             HilbertIndex(bits, b->at->first, b->at->second);
    });
  }
  result.order.reserve(sorted.size());
  for (const Device* d : sorted) result.order.push_back(d->id);
  return result;
}

}  // namespace trainscope::viewer
