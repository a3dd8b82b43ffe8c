// Renders one view of a ViewerState into an image without a screen (run
// with QT_QPA_PLATFORM=offscreen): the overview, the Marey graph and the
// loss Selection View paint their models directly; jobs, alerts, the
// Monitoring View (with its slider; its canvas at the top left), the range
// statistics panel and the whole window are grabbed from their widgets. Used by `trainscope-viewer
// --render`, tests and docs.
//
// Usage:
//   absl::StatusOr<QImage> image = OffscreenRenderer::Render(&state, "marey", 1400, 800, {});
//   image->save("marey.png");
//
// Threading: the UI thread (a QApplication must exist).
#ifndef TRAINSCOPE_VIEWER_WIDGETS_OFFSCREEN_RENDERER_H_
#define TRAINSCOPE_VIEWER_WIDGETS_OFFSCREEN_RENDERER_H_

#include <QImage>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainscope/viewer/viewer_state.h"
#include "trainscope/viewer/widgets/main_window.h"

namespace trainscope::viewer {

class OffscreenRenderer {
 public:
  // The views --render accepts ("all" is the whole window).
  static const std::vector<std::string>& Views();
  // INVALID_ARGUMENT names an unknown view.
  static absl::StatusOr<QImage> Render(ViewerState* state, const std::string& view, int width,
                                       int height, const MainWindow::Config& window_config);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_OFFSCREEN_RENDERER_H_
