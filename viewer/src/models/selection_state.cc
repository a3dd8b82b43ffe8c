#include "trainscope/viewer/selection_state.h"

namespace trainscope::viewer {

void SelectionState::OnStepClosed(uint64_t step) {
  if (newest_.has_value() && step <= *newest_) return;
  newest_ = step;
  if (following_) Set(step);
}

void SelectionState::Pin(uint64_t step) {
  if (following_) {
    following_ = false;
    ++version_;
  }
  Set(step);
}

void SelectionState::Follow() {
  if (!following_) {
    following_ = true;
    ++version_;
  }
  Set(newest_);
}

void SelectionState::Set(std::optional<uint64_t> step) {
  if (selected_ == step) return;
  selected_ = step;
  ++version_;
}

}  // namespace trainscope::viewer
