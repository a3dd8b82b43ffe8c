// The job-wide string table of the analysis: every batch carries its own
// string table; the analysis interns them once so ids compare across ranks.
//
// Usage:
//   JobStrings strings;
//   uint32_t id = strings.Intern("aten::conv2d");   // 0 is ""
//   absl::string_view s = strings.Get(id);
//
// Threading: not thread-safe; owned by the analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_STRINGS_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_STRINGS_H_

#include <cstdint>
#include <deque>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace trainscope::collector {

class JobStrings {
 public:
  JobStrings();
  uint32_t Intern(absl::string_view s);
  // The id of `s`, or 0 when it was never interned (0 is also "").
  uint32_t Find(absl::string_view s) const;
  absl::string_view Get(uint32_t id) const;  // "" for an unknown id
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // deque: views into it stay valid
  absl::flat_hash_map<absl::string_view, uint32_t> ids_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_STRINGS_H_
