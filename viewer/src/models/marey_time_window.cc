#include "trainscope/viewer/marey_time_window.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

namespace trainscope::viewer {

void MareyTimeWindow::Follow(uint32_t steps) {
  mode_ = Mode::kFollow;
  if (steps > 0) steps_ = std::min(steps, kMaxSteps);
}

void MareyTimeWindow::ShowAround(uint64_t step, uint32_t steps) {
  mode_ = Mode::kAroundStep;
  anchor_ = step;
  if (steps > 0) steps_ = std::min(steps, kMaxSteps);
}

void MareyTimeWindow::SetManual(int64_t start, int64_t end) {
  if (end < start) std::swap(start, end);
  mode_ = Mode::kManual;
  manual_ = {start, std::max(end, start + 100)};  // at most 100 ns across the plot
}

bool MareyTimeWindow::ZoomSteps(double factor) {
  if (mode_ != Mode::kFollow && mode_ != Mode::kAroundStep) return false;
  if (!(factor > 0)) return true;
  const double wanted = std::round(static_cast<double>(steps_) / factor);
  uint32_t next = static_cast<uint32_t>(std::clamp(wanted, 1.0, static_cast<double>(kMaxSteps)));
  // A small wheel turn still changes the count by at least one step.
  if (next == steps_) next = factor > 1 ? std::max<uint32_t>(1, steps_ - 1) : steps_ + 1;
  steps_ = std::min(next, kMaxSteps);
  return true;
}

MareyTimeWindow::Range MareyTimeWindow::WholeRun(int64_t low, int64_t high) const {
  if (low > high) return {};
  const int64_t pad = std::max<int64_t>((high - low) / 100, 1);
  return {low - pad, high + pad};
}

MareyTimeWindow::Range MareyTimeWindow::Resolve(const std::map<uint64_t, StepRecord>& steps,
                                                int64_t low, int64_t high,
                                                int64_t aligned_high) const {
  if (mode_ == Mode::kManual) return manual_;
  if (mode_ == Mode::kWholeRun || low > high || steps.empty()) return WholeRun(low, high);
  // Steps are on the aligned clock; on the raw clocks the range keeps its
  // length and moves with the data's end.
  const int64_t shift = high - aligned_high;
  int64_t start = 0, end = 0;
  if (mode_ == Mode::kFollow) {
    // The newest N closed steps, and the operators of the step still open.
    auto first = std::prev(steps.end());
    for (uint32_t i = 1; i < steps_ && first != steps.begin(); ++i) --first;
    start = first->second.start_ns + shift;
    end = std::max(high, std::prev(steps.end())->second.end_ns + shift);
  } else {
    auto at = steps.lower_bound(anchor_);
    if (at == steps.end()) at = std::prev(steps.end());
    auto first = at, last = at;
    const uint32_t before = (steps_ - 1) / 2;
    for (uint32_t i = 0; i < before && first != steps.begin(); ++i) --first;
    for (uint32_t i = before + 1; i < steps_ && std::next(last) != steps.end(); ++i) ++last;
    start = first->second.start_ns + shift;
    end = last->second.end_ns + shift;
  }
  start = std::max(start, low);
  if (end <= start) return WholeRun(low, high);
  const int64_t pad = std::max<int64_t>((end - start) / 50, 1);
  return {start - pad, end + pad};
}

}  // namespace trainscope::viewer
