#include "op_name_table.h"

namespace trainscope::pytorch {

const OpInfo* OpNameTable::Find(std::string_view name) {
  base::MutexLock lock(&mu_);
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  if (it != by_name_.end()) return it->second.get();
  auto info = std::make_unique<OpInfo>();
  info->name = std::string(name);
  info->id = agent_->Intern(name);
  info->cls = ClassifyOp(name);
  const OpInfo* result = info.get();
  by_name_.emplace(std::string(name), std::move(info));
  return result;
}

}  // namespace trainscope::pytorch
