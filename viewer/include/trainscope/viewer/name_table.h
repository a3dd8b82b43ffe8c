// Interns operator and group names for the viewer's records (id 0 = "").
//
// Usage:
//   NameTable names;
//   uint32_t id = names.Intern("aten::conv2d");
//   names.Name(id) == "aten::conv2d"
//
// Threading: not thread-safe; owned by the UI thread's models.
#ifndef TRAINSCOPE_VIEWER_NAME_TABLE_H_
#define TRAINSCOPE_VIEWER_NAME_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class NameTable {
 public:
  NameTable();

  uint32_t Intern(std::string_view name);
  // "" for an unknown id.
  const std::string& Name(uint32_t id) const;
  // The id of `name`, or 0 when it was never interned.
  uint32_t Find(std::string_view name) const;
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// The batch's operators with `name` and `group` re-pointed into `names`.
std::vector<OperatorRecord> InternOperators(const OperatorBatchRecord& batch, NameTable* names);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_NAME_TABLE_H_
