#include "trainscope/collector/analysis/device_liveness.h"

namespace trainscope::collector {

void DeviceLiveness::Tick(int64_t now_unix_ns, int64_t silent_after_ns) {
  if (active_ || !ticked_) {
    active_ = false;
    ticked_ = true;
    silent_ = false;
    last_seen_ns_ = now_unix_ns;
  } else if (live_ && !silent_ && now_unix_ns - last_seen_ns_ >= silent_after_ns) {
    silent_ = true;
  }
}

}  // namespace trainscope::collector
