#include "collective_tag.h"

#include <c10/util/ThreadLocalDebugInfo.h>

#include <memory>

namespace trainscope::pytorch {
namespace {

constexpr c10::DebugInfoKind kTagKind = c10::DebugInfoKind::TEST_INFO_2;

struct CollectiveTagInfo final : c10::DebugInfoBase {
  CollectiveTagInfo(uint64_t serial, trainscope_collective_tag t) : tracker_serial(serial), tag(t) {}
  uint64_t tracker_serial;
  trainscope_collective_tag tag;
};

}  // namespace

void PushCollectiveTag(uint64_t tracker_serial, trainscope_collective_tag tag) {
  c10::ThreadLocalDebugInfo::_push(kTagKind,
                                   std::make_shared<CollectiveTagInfo>(tracker_serial, tag));
}

void PopCollectiveTag() {
  try {
    c10::ThreadLocalDebugInfo::_pop(kTagKind);
  } catch (...) {  // nothing of ours on top (e.g. detach in between): nothing to undo
  }
}

trainscope_collective_tag CurrentCollectiveTag(const trainscope_observer* observer) {
  const auto* info =
      dynamic_cast<const CollectiveTagInfo*>(c10::ThreadLocalDebugInfo::get(kTagKind));
  if (info == nullptr || info->tracker_serial != trainscope_observer_tracker_serial(observer)) {
    return trainscope_observer_default_tag(observer);
  }
  return info->tag;
}

}  // namespace trainscope::pytorch
