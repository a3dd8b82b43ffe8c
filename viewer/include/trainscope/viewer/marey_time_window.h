// Which time range the Marey graph shows: the whole run, the newest N steps
// (following a live job), N steps around one step (a click in the overview),
// or a range the user zoomed, panned or brushed to. The model keeps the data;
// this class only turns the mode, the data's extent and the steps' boundaries
// into a [start, end) range, so "follow" keeps following whatever was zoomed
// before, and a reset lands on a readable range instead of the whole run.
//
// Usage:
//   MareyTimeWindow window;              // follows the newest 8 steps
//   window.ShowAround(102, 8);           // a click on step 102
//   MareyTimeWindow::Range r = window.Resolve(steps, low, high, aligned_high);
//   window.Zoom(2.0);                    // following: shows half as many steps
//
// Threading: not thread-safe; the model's owner (the UI thread) owns it.
#ifndef TRAINSCOPE_VIEWER_MAREY_TIME_WINDOW_H_
#define TRAINSCOPE_VIEWER_MAREY_TIME_WINDOW_H_

#include <cstdint>
#include <map>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class MareyTimeWindow {
 public:
  enum class Mode : uint8_t { kWholeRun, kFollow, kAroundStep, kManual };
  static constexpr uint32_t kDefaultSteps = 8;
  static constexpr uint32_t kMaxSteps = 100'000;

  struct Range {
    int64_t start = 0;
    int64_t end = 1'000'000;
  };

  void ShowWholeRun() { mode_ = Mode::kWholeRun; }
  // The newest `steps` closed steps and whatever ran after them.
  void Follow(uint32_t steps = 0);
  // `steps` steps centred on `step` (0: the current count).
  void ShowAround(uint64_t step, uint32_t steps = 0);
  void SetManual(int64_t start, int64_t end);
  // Following or around a step: shows `factor` times fewer steps (at least
  // one); true when it could (false: the caller zooms by time instead).
  bool ZoomSteps(double factor);

  // The range to show. `steps` carry their boundaries on the aligned
  // clock; `low`..`high` is the data's extent on the displayed clock (low >
  // high: no data) and `aligned_high` its end on the aligned clock, so a
  // range found from the steps can be moved to the raw clocks.
  Range Resolve(const std::map<uint64_t, StepRecord>& steps, int64_t low, int64_t high,
                int64_t aligned_high) const;

  Mode mode() const { return mode_; }
  uint32_t steps() const { return steps_; }
  uint64_t anchor_step() const { return anchor_; }

 private:
  Range WholeRun(int64_t low, int64_t high) const;

  Mode mode_ = Mode::kFollow;
  uint32_t steps_ = kDefaultSteps;
  uint64_t anchor_ = 0;  // kAroundStep
  Range manual_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_MAREY_TIME_WINDOW_H_
