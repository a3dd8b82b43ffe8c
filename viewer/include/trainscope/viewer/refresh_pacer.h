// When the live window pulls the feed into its models and repaints: at most
// kVisibleHz times a second while the window is visible, kHiddenHz while it
// is hidden or minimised (the models stay current, nothing is painted), and
// never when nothing arrived. The viewer runs beside training: following a
// 4-rank job took 29-81 % of a core at 30 repaints a second (issue 23.5).
//
// Usage (the frame timer):
//   if (pacer.Due(now_ns, window_visible, feed.HasPending())) { apply; repaint; }
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_REFRESH_PACER_H_
#define TRAINSCOPE_VIEWER_REFRESH_PACER_H_

#include <cstdint>
#include <optional>

namespace trainscope::viewer {

class RefreshPacer {
 public:
  static constexpr int kVisibleHz = 8;
  static constexpr int kHiddenHz = 1;

  // Whether to apply and repaint now; counts it when so.
  bool Due(int64_t now_ns, bool visible, bool pending);
  uint64_t refreshes() const { return refreshes_; }

 private:
  std::optional<int64_t> last_ns_;
  uint64_t refreshes_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_REFRESH_PACER_H_
