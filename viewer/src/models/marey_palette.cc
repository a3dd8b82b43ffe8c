#include "trainscope/viewer/marey_palette.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace trainscope::viewer {

Color MareyPalette::ForClass(OpClass c) {
  switch (c) {
    case OpClass::kCompute:
      return kComputeColor;
    case OpClass::kCollective:
      return kCollectiveColor;
    case OpClass::kSend:
      return kSendColor;
    case OpClass::kRecv:
      return kRecvColor;
    case OpClass::kGpuKernel:
      return kComputeColor;
    case OpClass::kGpuCollective:
      return kCollectiveColor;
    case OpClass::kGpuCopy:
      return kGpuCopyColor;
  }
  return kComputeColor;
}

Color MareyPalette::Lerp(Color a, Color b, double f) {
  f = std::clamp(f, 0.0, 1.0);
  auto channel = [&](int shift) {
    const double x = ((a >> shift) & 0xFF) * (1 - f) + ((b >> shift) & 0xFF) * f;
    return static_cast<uint32_t>(std::lround(x)) << shift;
  };
  return channel(24) | channel(16) | channel(8) | channel(0);
}

}  // namespace trainscope::viewer
