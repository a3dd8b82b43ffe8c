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
  const OpClass& cls = info->cls;
  info->c.name = info->name.c_str();
  info->c.id = info->id;
  info->c.flags = (cls.is_collective ? TRAINSCOPE_OP_COLLECTIVE : 0u) |
                  (cls.is_point_to_point ? TRAINSCOPE_OP_POINT_TO_POINT : 0u) |
                  (cls.opens_backward ? TRAINSCOPE_OP_OPENS_BACKWARD : 0u) |
                  (cls.optimizer_step ? TRAINSCOPE_OP_OPTIMIZER_STEP : 0u) |
                  (cls.excluded_from_phases ? TRAINSCOPE_OP_EXCLUDED_FROM_PHASES : 0u);
  info->c.collective_kind = static_cast<uint32_t>(cls.collective);
  info->c.flop = static_cast<uint32_t>(cls.flop);
  info->c.internal = info.get();
  const OpInfo* result = info.get();
  by_name_.emplace(std::string(name), std::move(info));
  return result;
}

}  // namespace trainscope::pytorch
