#include "trainscope/collector/analysis/operator_pairer.h"

#include <algorithm>

namespace trainscope::collector {

std::optional<DeviceEvent> OperatorPairer::End(const DeviceEvent& end) {
  // The innermost open operator of the same thread.
  for (size_t i = open_.size(); i-- > 0;) {
    const DeviceEvent& begin = open_[i];
    if (begin.thread != end.thread) continue;
    DeviceEvent op = begin;
    op.kind = trainscope::v1::EVENT_KIND_OPERATOR;
    op.end_ns = std::max(end.start_ns, begin.start_ns);
    if (op.name == 0) op.name = end.name;
    open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(i));
    return op;
  }
  return std::nullopt;
}

}  // namespace trainscope::collector
