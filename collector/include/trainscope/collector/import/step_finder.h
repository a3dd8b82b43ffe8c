// Finds the step boundaries of a trace that has no ProfilerStep#N marks,
// from its CPU operators, and says which evidence it used:
//   1. Optimizer.step#... ranges (torch's optimizer hook): a step ends with
//      the last optimizer of an iteration (several optimizers per iteration,
//      e.g. Shampoo then EMA, count once); the next step starts with the main
//      thread's first top-level operator after it.
//   2. Else the repeating pattern of the main thread's top-level operators
//      (the thread with the most top-level time): an operator that occurs
//      once per iteration is one that splits the thread's top-level sequence
//      into segments in each of which some other operators also occur exactly
//      once (forward, backward, zero_grad...). Steps start at the earliest of
//      those operators, every time it occurs. At least 3 occurrences.
//   3. Else none, with the reason (a warm-up and one measured pass repeat
//      nothing often enough to tell an iteration from a layer).
//
// Usage:
//   StepFinder finder;
//   for (each CPU operator in time order, parents before children)
//     finder.Add(tid, start_ns, end_ns, name);
//   StepFinder::Result r = finder.Find();
//   if (r.source == StepFinder::Source::kNone) print(r.description);  // why
//
// Memory: the top-level operators and optimizer ranges only.
// Threading: not thread-safe; one thread adds, then finds.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_STEP_FINDER_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_STEP_FINDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace trainscope::collector {

class StepFinder {
 public:
  enum class Source { kNone, kOptimizerStep, kRepeatingPattern };
  struct Result {
    Source source = Source::kNone;
    std::vector<int64_t> starts_ns;  // each step's start, ascending
    int64_t thread = 0;              // the main thread the steps were found on
    // Which evidence, e.g. "5 Optimizer.step#SGD.step ranges on thread 1102",
    // or why none was found.
    std::string description;
  };

  void Add(int64_t tid, int64_t start_ns, int64_t end_ns, absl::string_view name);
  Result Find() const;

  static const char* SourceName(Source source);

 private:
  struct Op {
    int64_t start_ns;
    int64_t end_ns;
    uint32_t name;
  };
  struct Thread {
    int64_t top_end_ns = INT64_MIN;
    int64_t top_level_ns = 0;  // total time of its top-level operators
    std::vector<Op> top_level;
    std::vector<Op> optimizer;  // outermost Optimizer.step# ranges
    int64_t optimizer_end_ns = INT64_MIN;
  };
  uint32_t Intern(absl::string_view name);
  bool FromOptimizer(Result* result) const;
  bool FromPattern(Result* result) const;

  absl::flat_hash_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  absl::flat_hash_map<int64_t, Thread> threads_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_STEP_FINDER_H_
