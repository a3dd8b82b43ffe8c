#include "trainscope/viewer/name_table.h"

namespace trainscope::viewer {

NameTable::NameTable() {
  names_.emplace_back();
  ids_.emplace(std::string(), 0);
}

uint32_t NameTable::Intern(std::string_view name) {
  auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
  if (inserted) names_.emplace_back(name);
  return it->second;
}

const std::string& NameTable::Name(uint32_t id) const {
  return id < names_.size() ? names_[id] : names_[0];
}

uint32_t NameTable::Find(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  return it == ids_.end() ? 0 : it->second;
}

std::vector<OperatorRecord> InternOperators(const OperatorBatchRecord& batch, NameTable* names) {
  std::vector<uint32_t> ids(batch.strings.size());
  for (size_t i = 0; i < batch.strings.size(); ++i) ids[i] = names->Intern(batch.strings[i]);
  auto map = [&](uint32_t id) { return id < ids.size() ? ids[id] : 0; };
  std::vector<OperatorRecord> out = batch.operators;
  for (OperatorRecord& op : out) {
    op.name = map(op.name);
    op.group = map(op.group);
  }
  return out;
}

}  // namespace trainscope::viewer
