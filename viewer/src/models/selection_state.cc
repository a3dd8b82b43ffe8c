#include "trainscope/viewer/selection_state.h"

namespace trainscope::viewer {

void SelectionState::OnStepClosed(uint64_t step) {
  if (newest_.has_value() && step <= *newest_) return;
  newest_ = step;
  if (following_) Set(step);
}

void SelectionState::ForgetSteps() {
  newest_.reset();
  if (!following_) {
    following_ = true;
    ++version_;
  }
  Set(std::nullopt);
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

void SelectionState::SelectDevices(const std::vector<uint32_t>& ranks) {
  std::set<uint32_t> wanted(ranks.begin(), ranks.end());
  if (wanted == ranks_ && !link_.has_value()) return;
  ranks_ = std::move(wanted);
  link_.reset();
  ++version_;
  ++devices_version_;
}

void SelectionState::SelectLink(uint32_t src, uint32_t dst) {
  const std::set<uint32_t> wanted = {src, dst};
  if (wanted == ranks_ && link_ == std::make_pair(src, dst)) return;
  ranks_ = wanted;
  link_ = std::make_pair(src, dst);
  ++version_;
  ++devices_version_;
}

void SelectionState::ClearDevices() { SelectDevices({}); }

void SelectionState::Set(std::optional<uint64_t> step) {
  if (selected_ == step) return;
  selected_ = step;
  ++version_;
}

}  // namespace trainscope::viewer
