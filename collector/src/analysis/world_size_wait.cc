#include "trainscope/collector/analysis/world_size_wait.h"

namespace trainscope::collector {

void WorldSizeWait::Tick(int64_t now_unix_ns, uint32_t known, int64_t wait_ns) {
  if (!Awaiting(known)) return;
  if (since_ns_ == 0) since_ns_ = now_unix_ns;
  over_ = now_unix_ns - since_ns_ >= wait_ns;
}

}  // namespace trainscope::collector
