// Paints a MareyModel and turns the mouse into model calls: wheel zooms
// around the pointer, left-drag pans, right-drag brushes a time range to
// zoom to, shift+left-drag picks a time range for the range statistics
// (rangeSelected; the chosen steps are then marked: SetMarkedRange),
// double-click resets, hovering shows the model's hit text, a click on a
// group label expands or collapses it and a click on an operator selects
// its step.
//
// Usage:
//   MareyWidget* view = new MareyWidget(&state.marey, parent);
//   connect(view, &MareyWidget::stepClicked, ...);
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_MAREY_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_MAREY_WIDGET_H_

#include <QPoint>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <utility>

#include "trainscope/viewer/marey_model.h"

class QCheckBox;
class QComboBox;

namespace trainscope::viewer {

class MareyWidget : public QWidget {
  Q_OBJECT

 public:
  explicit MareyWidget(MareyModel* model, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {1100, 520}; }
  // The last frame's paint time (model layout + painting), for the status bar.
  double last_frame_ms() const { return last_frame_ms_; }
  // The range statistics' steps, on the aligned clock: a band over the plot
  // (nothing on the raw clocks, where steps have no one extent).
  void SetMarkedRange(std::optional<std::pair<int64_t, int64_t>> range);

 signals:
  void stepClicked(quint64 step);
  void viewChanged();
  // Shift+left-drag: the time range [t0, t1] on the displayed clock.
  void rangeSelected(qint64 t0, qint64 t1);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  enum class Drag { kNone, kPan, kBrush, kRange };
  MareyModel* model_;
  Drag drag_ = Drag::kNone;
  QPoint press_;
  QPoint last_;
  bool moved_ = false;
  double last_frame_ms_ = 0;
  std::optional<std::pair<int64_t, int64_t>> marked_range_;
};

// The Marey graph with its controls: clock (aligned/raw), grouping, reset.
class MareyPanel : public QWidget {
  Q_OBJECT

 public:
  explicit MareyPanel(MareyModel* model, QWidget* parent = nullptr);
  MareyWidget* view() const { return view_; }
  void SyncControls();

 private:
  MareyModel* model_;
  MareyWidget* view_;
  QCheckBox* raw_;
  QCheckBox* cpu_rows_;  // devices with GPU streams: their CPU row shown
  QComboBox* grouping_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_MAREY_WIDGET_H_
