// The table `trainscope steps` prints: one row per device and step, and for
// GPU jobs the device-time columns and a verdict per device saying where its
// GPU's time went (the finding a user of a GPU job needs first: a step that
// is CPU-bound leaves the device idle, however fast its kernels are).
//
// Usage:
//   std::cout << RenderStepTable(snapshot.steps());
//
// Threading: pure functions.
#ifndef TRAINSCOPE_CLI_STEP_TABLE_H_
#define TRAINSCOPE_CLI_STEP_TABLE_H_

#include <string>

#include "google/protobuf/repeated_field.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::cli {

// Columns STEP RANK STAGE STEP_MS DATA_MS COMPUTE_MS WAIT_MS XFER_MS IDLE_MS
// GFLOPS PEAK_MEM WAITED_FOR; when any device has GPU work, COMPUTE is GPU
// busy, and COPY_MS, LAUNCH_MS (idle while the CPU launched nothing), SYNC_MS
// (idle while the host waited in a sync call) and KERNELS follow, then one
// line per GPU device: "rank 0: GPU busy 17% of 3 steps, idle 78%: 77%
// launch-bound (the CPU does not launch work fast enough), ...".
std::string RenderStepTable(const google::protobuf::RepeatedPtrField<trainscope::v1::StepReport>&
                                steps);

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_STEP_TABLE_H_
