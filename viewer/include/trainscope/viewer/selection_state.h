// The step every view shows, shared by all of them. Following (the default)
// moves the selection to each newly closed step; selecting a step by hand
// pins it until Follow() is called again.
//
// Usage:
//   SelectionState selection;
//   selection.OnStepClosed(41);        // following: selected_step() == 41
//   selection.Pin(12);                 // pinned on 12; newer steps do not move it
//   selection.Follow();                // back to the newest (41)
//   if (selection.version() != seen) Redraw();
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_SELECTION_STATE_H_
#define TRAINSCOPE_VIEWER_SELECTION_STATE_H_

#include <cstdint>
#include <optional>

namespace trainscope::viewer {

class SelectionState {
 public:
  // A new step closed (steps may arrive out of order; the newest is the
  // highest number).
  void OnStepClosed(uint64_t step);
  // Selects `step` and stops following.
  void Pin(uint64_t step);
  // Follows the newest step again.
  void Follow();

  std::optional<uint64_t> selected_step() const { return selected_; }
  std::optional<uint64_t> newest_step() const { return newest_; }
  bool following() const { return following_; }
  // Changes whenever the selection or the mode changes.
  uint64_t version() const { return version_; }

 private:
  void Set(std::optional<uint64_t> step);

  std::optional<uint64_t> selected_;
  std::optional<uint64_t> newest_;
  bool following_ = true;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_SELECTION_STATE_H_
