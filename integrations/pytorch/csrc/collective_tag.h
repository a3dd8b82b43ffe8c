// Carries a collective's tag (process group, peer; collective_tracker.h) from a
// torch.distributed call to the observer that records the collective.
//
// Usage (the Python wrapper around dist.all_reduce, through trainscope._C):
//   trainscope_session_make_collective_tag(session, -1, "pg:1[0,2]", 9, &serial, &tag);
//   PushCollectiveTag(serial, tag);
//   ... dist.all_reduce(t, group=g) ...
//   PopCollectiveTag();
//   // in the observer, when the work item's RecordFunction starts:
//   trainscope_collective_tag tag = CurrentCollectiveTag(observer);
//
// Why not a thread_local: gloo starts the RecordFunction of an async work item
// (all_reduce, broadcast, ...) on one of its worker threads, not on the
// calling thread. c10d hands the caller's thread-local state to that thread
// (at::wrapPropagateTLSState), and c10::ThreadLocalDebugInfo, whose purpose
// is passing such context down to observers, is part of it. The tag is a
// DebugInfoBase under DebugInfoKind::TEST_INFO_2, a kind torch itself uses
// only in its tests; a foreign object under that kind is ignored.
//
// Threading: Push/Pop act on the calling thread's debug info and must nest
// (the wrapper pops in `finally`); CurrentCollectiveTag on any thread.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_COLLECTIVE_TAG_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_COLLECTIVE_TAG_H_

#include <cstdint>

#include "trainscope_session.h"

namespace trainscope::pytorch {

void PushCollectiveTag(uint64_t tracker_serial, trainscope_collective_tag tag);
void PopCollectiveTag();
// The innermost tag pushed by `observer`'s session, else the default group's.
trainscope_collective_tag CurrentCollectiveTag(const trainscope_observer* observer);

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_COLLECTIVE_TAG_H_
