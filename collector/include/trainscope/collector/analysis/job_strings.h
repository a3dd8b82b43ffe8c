// The job-wide string table of the analysis: every batch carries its own
// string table; the analysis interns them once so ids compare across ranks.
//
// Bounded: a job that invents names without end (a name per step, per
// request...) would otherwise grow the collector without limit. Past
// `max_names` distinct names or `max_bytes` of name text, a new name maps to
// one id whose text is kOverBudgetName, and each such mapping is counted
// (over_budget()), so that the loss shows in `trainscope status`. Names
// interned before the budget ran out keep their ids.
//
// Usage:
//   JobStrings strings({.max_names = 200'000});
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

struct JobStringsOptions {
  // Distinct names kept ("" and kOverBudgetName not counted). 0: no limit.
  uint64_t max_names = 200'000;
  // Bytes of name text kept. 0: no limit.
  uint64_t max_bytes = 32ull << 20;
};

class JobStrings {
 public:
  // The text every name past the budget reads as.
  static constexpr absl::string_view kOverBudgetName = "(name budget exceeded)";

  explicit JobStrings(JobStringsOptions options = {});
  uint32_t Intern(absl::string_view s);
  // The id of `s`, or 0 when it was never interned (0 is also "").
  uint32_t Find(absl::string_view s) const;
  absl::string_view Get(uint32_t id) const;  // "" for an unknown id
  size_t size() const { return strings_.size(); }

  // Distinct names held, without "" and kOverBudgetName.
  uint64_t names() const { return strings_.size() - 1 - (over_budget_id_ != 0 ? 1 : 0); }
  uint64_t bytes() const { return bytes_; }
  // Interning calls answered with the over-budget id (one per name per batch
  // string table: the same refused name in two batches counts twice).
  uint64_t over_budget() const { return over_budget_; }
  const JobStringsOptions& options() const { return options_; }

 private:
  uint32_t Add(absl::string_view s);

  const JobStringsOptions options_;
  std::deque<std::string> strings_;  // deque: views into it stay valid
  absl::flat_hash_map<absl::string_view, uint32_t> ids_;
  uint64_t bytes_ = 0;
  uint32_t over_budget_id_ = 0;  // 0 until the budget first runs out
  uint64_t over_budget_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_JOB_STRINGS_H_
