// Interned, classified operator names of one session: the slow path behind
// the observer's per-thread pointer cache.
//
// Usage:
//   OpNameTable names(agent);
//   const OpInfo* info = names.Find("aten::conv2d");  // interned + classified once
//   agent->RecordOperator(info->id, ...);
//
// An OpInfo lives as long as its table and never moves, so threads may cache
// the pointer. Find takes a mutex: the observer calls it once per distinct
// name per thread, never in the steady state.
//
// Threading: Find from any thread.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_NAME_TABLE_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_NAME_TABLE_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "op_classifier.h"
#include "trainscope/agent/agent.h"
#include "trainscope/base/mutex.h"
#include "trainscope_session.h"

namespace trainscope::pytorch {

struct OpInfo {
  std::string name;  // NUL-terminated copy; the cache checks hits against it
  agent::StringId id = agent::kEmptyString;
  OpClass cls;
  // The same, as the C API hands it to an extension (trainscope_session.h);
  // c.internal points back here.
  trainscope_op_info c{};
};

class OpNameTable {
 public:
  explicit OpNameTable(agent::Agent* agent) : agent_(agent) {}

  const OpInfo* Find(std::string_view name);

 private:
  agent::Agent* const agent_;
  base::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<OpInfo>> by_name_;  // guarded by mu_
};

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_NAME_TABLE_H_
