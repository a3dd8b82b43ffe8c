#include "trainscope/viewer/operator_coverage.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace trainscope::viewer {
namespace {

std::string Steps(const std::pair<uint64_t, uint64_t>& steps) {
  return steps.first == steps.second ? absl::StrCat("step ", steps.first)
                                     : absl::StrCat("steps ", steps.first, "-", steps.second);
}

}  // namespace

OperatorCoverage::OperatorCoverage(std::optional<uint64_t> total, uint64_t loaded,
                                   uint64_t max_operators,
                                   std::optional<std::pair<uint64_t, uint64_t>> job_steps,
                                   std::optional<std::pair<uint64_t, uint64_t>> loaded_steps,
                                   std::optional<std::pair<uint64_t, uint64_t>> range)
    : total_(total),
      loaded_(loaded),
      max_operators_(max_operators),
      job_steps_(job_steps),
      loaded_steps_(loaded_steps),
      range_(range) {}

std::string OperatorCoverage::Grouped(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string OperatorCoverage::Notice() const {
  if (!cut()) return "";
  std::string text = absl::StrCat(
      "Showing ", Grouped(loaded_), " of ",
      total_.has_value() ? Grouped(*total_) : absl::StrCat("more than ", Grouped(loaded_)),
      " operators (--max-operators ", Grouped(max_operators_), ")");
  if (loaded_steps_.has_value()) {
    absl::StrAppend(&text, ": ", Steps(*loaded_steps_));
    const auto& of = range_.has_value() ? range_ : job_steps_;
    if (of.has_value()) {
      absl::StrAppend(&text, " of ", range_.has_value() ? "the range's " : "the job's ",
                      Steps(*of));
    }
  }
  // An example range: the job's first ten steps (or all of them).
  const uint64_t first = job_steps_.has_value() ? job_steps_->first : 0;
  const uint64_t last = job_steps_.has_value() ? std::min(job_steps_->second, first + 9) : 9;
  absl::StrAppend(&text, ". Load a range with --steps FIRST-LAST (e.g. --steps ", first, "-", last,
                  ") or raise --max-operators.");
  return text;
}

}  // namespace trainscope::viewer
