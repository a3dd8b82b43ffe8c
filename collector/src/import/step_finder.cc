#include "trainscope/collector/import/step_finder.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trainscope::collector {
namespace {

constexpr char kOptimizerStep[] = "Optimizer.step#";
// A pattern needs this many iterations to be told from a layer's repeats.
constexpr size_t kMinRepeats = 3;

}  // namespace

const char* StepFinder::SourceName(Source source) {
  switch (source) {
    case Source::kOptimizerStep:
      return "Optimizer.step# ranges";
    case Source::kRepeatingPattern:
      return "repeating pattern";
    case Source::kNone:
      break;
  }
  return "none";
}

uint32_t StepFinder::Intern(absl::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

void StepFinder::Add(int64_t tid, int64_t start_ns, int64_t end_ns, absl::string_view name) {
  Thread& t = threads_[tid];
  end_ns = std::max(end_ns, start_ns);
  if (start_ns >= t.top_end_ns) {
    t.top_level.push_back({start_ns, end_ns, Intern(name)});
    t.top_end_ns = end_ns;
    t.top_level_ns += end_ns - start_ns;
  }
  // An optimizer that wraps another (EMA around Shampoo) counts once.
  if (absl::StartsWith(name, kOptimizerStep) && start_ns >= t.optimizer_end_ns) {
    t.optimizer.push_back({start_ns, end_ns, Intern(name)});
    t.optimizer_end_ns = end_ns;
  }
}

StepFinder::Result StepFinder::Find() const {
  Result result;
  if (FromOptimizer(&result) || FromPattern(&result)) return result;
  return result;
}

bool StepFinder::FromOptimizer(Result* result) const {
  const std::pair<const int64_t, Thread>* main = nullptr;
  for (const auto& entry : threads_) {
    if (entry.second.optimizer.empty()) continue;
    if (main == nullptr || entry.second.optimizer.size() > main->second.optimizer.size()) {
      main = &entry;
    }
  }
  if (main == nullptr) return false;
  const Thread& t = main->second;
  // Optimizers per iteration: the distinct names, when they repeat in turn.
  std::set<uint32_t> distinct;
  for (const Op& o : t.optimizer) distinct.insert(o.name);
  size_t per_iteration = distinct.size();
  for (size_t i = per_iteration; i < t.optimizer.size(); ++i) {
    if (t.optimizer[i].name != t.optimizer[i - per_iteration].name) {
      per_iteration = 1;  // no regular turn: every optimizer ends a step
      break;
    }
  }
  std::vector<int64_t> ends;
  for (size_t i = per_iteration - 1; i < t.optimizer.size(); i += per_iteration) {
    ends.push_back(t.optimizer[i].end_ns);
  }
  // Where does an iteration start? Work may follow the optimizer in the
  // same iteration (metrics, detach...), so not right after it: at the
  // operator that occurs once before the first optimizer and once between
  // each two, the earliest of those before the first (a profiled trace
  // starts with an iteration).
  const std::vector<Op>& ops = t.top_level;
  auto first_at_or_after = [&](int64_t at) {
    return std::lower_bound(ops.begin(), ops.end(), at,
                            [](const Op& op, int64_t v) { return op.start_ns < v; });
  };
  std::vector<int64_t> starts;
  std::optional<uint32_t> opener;
  if (ends.size() >= 2) {
    absl::flat_hash_map<uint32_t, std::vector<int>> counts;  // name -> per segment
    const size_t segments = ends.size();                     // before ends[0], then between ends
    for (const Op& op : ops) {
      const size_t segment = static_cast<size_t>(
          std::upper_bound(ends.begin(), ends.end(), op.start_ns) - ends.begin());
      if (segment >= segments) continue;  // after the last optimizer
      std::vector<int>& c = counts[op.name];
      c.resize(segments, 0);
      ++c[segment];
    }
    const Op* earliest = nullptr;
    for (const Op& op : ops) {
      if (op.start_ns >= ends.front()) break;
      const std::vector<int>& c = counts[op.name];
      if (std::all_of(c.begin(), c.end(), [](int n) { return n == 1; })) {
        earliest = &op;
        break;
      }
    }
    if (earliest != nullptr) {
      opener = earliest->name;
      for (const Op& op : ops) {
        if (op.name == *opener) starts.push_back(op.start_ns);
      }
    }
  }
  if (!opener) {
    // Too few optimizer ranges to see an order: the first top-level
    // operator after each (and the thread's first).
    for (int64_t end : ends) {
      auto it = first_at_or_after(end);
      if (it != ops.end()) starts.push_back(it->start_ns);
    }
    if (!ops.empty() && (starts.empty() || ops.front().start_ns < starts.front())) {
      starts.insert(starts.begin(), ops.front().start_ns);
    }
  }
  result->source = Source::kOptimizerStep;
  result->starts_ns = std::move(starts);
  result->thread = main->first;
  result->description = absl::StrFormat(
      "%d %s ranges on thread %d (%d per iteration); each step starts with '%s'",
      t.optimizer.size(), names_[t.optimizer.front().name], main->first, per_iteration,
      opener ? names_[*opener] : std::string("the first operator after an optimizer"));
  return true;
}

bool StepFinder::FromPattern(Result* result) const {
  const std::pair<const int64_t, Thread>* main = nullptr;
  for (const auto& entry : threads_) {
    if (main == nullptr || entry.second.top_level_ns > main->second.top_level_ns) main = &entry;
  }
  if (main == nullptr) {
    result->description =
        "no steps: the trace has no ProfilerStep# marks, no Optimizer.step# ranges and no CPU "
        "operators";
    return false;
  }
  const std::vector<Op>& ops = main->second.top_level;
  absl::flat_hash_map<uint32_t, std::vector<size_t>> at;  // name -> indices in ops
  for (size_t i = 0; i < ops.size(); ++i) at[ops[i].name].push_back(i);
  // For each candidate anchor: which other names occur exactly once in every
  // segment between its consecutive occurrences.
  struct Best {
    size_t score = 0;
    size_t repeats = 0;
    std::vector<uint32_t> members;
  } best;
  for (const auto& [anchor, where] : at) {
    if (where.size() < kMinRepeats) continue;
    absl::flat_hash_map<uint32_t, size_t> once;  // name -> segments where it occurred once
    for (size_t s = 0; s + 1 < where.size(); ++s) {
      absl::flat_hash_map<uint32_t, int> in_segment;
      for (size_t i = where[s] + 1; i < where[s + 1]; ++i) ++in_segment[ops[i].name];
      for (const auto& [name, n] : in_segment) {
        if (n == 1) ++once[name];
      }
    }
    std::vector<uint32_t> members = {anchor};
    for (const auto& [name, segments] : once) {
      if (segments == where.size() - 1 && at[name].size() + 1 >= where.size() &&
          at[name].size() <= where.size() + 1) {
        members.push_back(name);
      }
    }
    const size_t score = members.size() - 1;
    if (score > best.score || (score == best.score && score > 0 && where.size() > best.repeats)) {
      best = {score, where.size(), std::move(members)};
    }
  }
  if (best.score == 0) {
    result->description = absl::StrFormat(
        "no steps: the trace has no ProfilerStep# marks and no Optimizer.step# ranges, and no "
        "pattern repeats among the %d top-level operators of its main thread %d: no operator "
        "occurs at least %d times with others once between each two of its occurrences (a "
        "warm-up and one measured pass, or fewer than %d iterations, are not enough to tell "
        "an iteration from a layer)",
        ops.size(), main->first, kMinRepeats, kMinRepeats);
    return false;
  }
  // The iteration starts with the member that occurs first.
  uint32_t opener = best.members.front();
  for (uint32_t m : best.members) {
    if (at.at(m).front() < at.at(opener).front()) opener = m;
  }
  result->source = Source::kRepeatingPattern;
  for (size_t i : at.at(opener)) result->starts_ns.push_back(ops[i].start_ns);
  result->thread = main->first;
  result->description = absl::StrFormat(
      "the repeating pattern of thread %d's top-level operators: '%s' starts each of %d "
      "iterations, %d other operators occur once in each",
      main->first, names_[opener], result->starts_ns.size(), best.score);
  return true;
}

}  // namespace trainscope::collector
