// A device group of the Marey graph: the devices of one pipeline stage
// ("stage 0") or of one host ("host node-1"), shown as three rows whose
// tracks hold each operator's minimum, average and maximum start and end
// over the group's devices (an operator is the same on every device when
// its join key is; sends and receives stay apart).
//
// Usage:
//   std::map<std::string, std::unique_ptr<MareyGroup>> groups =
//       MareyGroup::Build(MareyGroup::By::kStage, device_tracks, device_info);
//   const MareyTrack& slowest = groups.at("stage 1")->max;
//
// Threading: Build reads the device tracks and returns new groups; a plain
// value afterwards.
#ifndef TRAINSCOPE_VIEWER_MAREY_GROUP_H_
#define TRAINSCOPE_VIEWER_MAREY_GROUP_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/viewer/marey_track.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct MareyGroup {
  enum class By { kStage, kHost };

  // Groups every device of `devices` (prepared tracks, by rank) by its
  // stage or host in `info`, keyed "stage N" / "host NAME" ("host ?" when
  // unknown); the three tracks come back prepared.
  static std::map<std::string, std::unique_ptr<MareyGroup>> Build(
      By by, const std::map<uint32_t, std::unique_ptr<MareyTrack>>& devices,
      const std::map<uint32_t, DeviceInfo>& info);

  std::string key;
  std::vector<uint32_t> ranks;  // ascending
  MareyTrack min;
  MareyTrack avg;
  MareyTrack max;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_GROUP_H_
