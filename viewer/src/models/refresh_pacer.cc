#include "trainscope/viewer/refresh_pacer.h"

namespace trainscope::viewer {

bool RefreshPacer::Due(int64_t now_ns, bool visible, bool pending) {
  if (!pending) return false;
  const int64_t interval_ns = 1'000'000'000 / (visible ? kVisibleHz : kHiddenHz);
  if (last_ns_.has_value() && now_ns - *last_ns_ < interval_ns && now_ns >= *last_ns_) {
    return false;
  }
  last_ns_ = now_ns;
  ++refreshes_;
  return true;
}

}  // namespace trainscope::viewer
