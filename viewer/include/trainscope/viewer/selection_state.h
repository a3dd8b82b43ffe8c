// The step every view shows, shared by all of them. Following (the default)
// moves the selection to each newly closed step; selecting a step by hand
// pins it until Follow() is called again. Also the devices and the link
// selected in any cluster view (topology lasso, a matrix cell, a slow
// link's alert), which every view highlights (linked selection).
//
// Usage:
//   SelectionState selection;
//   selection.OnStepClosed(41);        // following: selected_step() == 41
//   selection.Pin(12);                 // pinned on 12; newer steps do not move it
//   selection.Follow();                // back to the newest (41)
//   selection.SelectLink(12, 13);     // ranks 12 and 13 and their link
//   selection.SelectDevices({4, 5});  // a lasso: those devices, no link
//   if (selection.version() != seen) Redraw();
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_SELECTION_STATE_H_
#define TRAINSCOPE_VIEWER_SELECTION_STATE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

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
  // Other steps replace the ones known (ViewerState::Load: a stored job's
  // step range loaded in the window): none is known or selected, and the
  // newest to come is followed. The devices and link stay selected.
  void ForgetSteps();

  // Replaces the selected devices (and drops the link); empty: none.
  void SelectDevices(const std::vector<uint32_t>& ranks);
  // Selects a link (sender, receiver) and its two devices.
  void SelectLink(uint32_t src, uint32_t dst);
  void ClearDevices();

  std::optional<uint64_t> selected_step() const { return selected_; }
  const std::set<uint32_t>& selected_ranks() const { return ranks_; }
  std::optional<std::pair<uint32_t, uint32_t>> selected_link() const { return link_; }
  bool IsSelected(uint32_t rank) const { return ranks_.count(rank) != 0; }
  // Changes whenever the selected devices or link change.
  uint64_t devices_version() const { return devices_version_; }
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
  std::set<uint32_t> ranks_;
  std::optional<std::pair<uint32_t, uint32_t>> link_;
  uint64_t devices_version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_SELECTION_STATE_H_
