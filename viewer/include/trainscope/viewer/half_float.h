// IEEE 754 binary16 ("half") to float, for the loss-contribution maps, which
// the ranks ship as little-endian halves to keep snapshots small.
//
// Usage:
//   HalfToFloat(0x3C00) == 1.0f;
//   std::vector<float> values;
//   if (!DecodeHalfs(map.contribution(), map.height() * map.width(), &values)) ...;
//
// Threading: pure functions.
#ifndef TRAINSCOPE_VIEWER_HALF_FLOAT_H_
#define TRAINSCOPE_VIEWER_HALF_FLOAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace trainscope::viewer {

// Exact: every half is a float. Subnormals, infinities and NaN are kept.
float HalfToFloat(uint16_t half);

// Decodes `count` little-endian halves from `bytes` into `out` (replaced).
// Returns false, leaving `out` empty, when `bytes` is not exactly 2 * count
// bytes: a truncated map is not drawn rather than drawn shifted.
bool DecodeHalfs(std::string_view bytes, size_t count, std::vector<float>* out);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_HALF_FLOAT_H_
