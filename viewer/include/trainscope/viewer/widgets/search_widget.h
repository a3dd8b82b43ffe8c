// The search field and its results (issue 23.5) over a SearchModel: typing
// searches (after a short pause, so a big job is not scanned per key), the
// results are listed with their counts, Enter jumps to the next match and
// Shift+Enter to the previous one (jumpRequested; the window applies it to
// the views), a click or Up/Down picks the result F3 walks, and Escape hands
// the keys back to the window (done). It only shows the model.
//
// Usage:
//   auto* search = new SearchWidget(&state.search, parent);
//   connect(search, &SearchWidget::jumpRequested, [&](int direction) {
//     if (state.search.Jump(direction, &state.selection, &state.marey)) Redraw();
//     search->Refresh();
//   });
//   search->FocusField();  // Ctrl+F, "/"
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_SEARCH_WIDGET_H_
#define TRAINSCOPE_VIEWER_WIDGETS_SEARCH_WIDGET_H_

#include <QString>
#include <QWidget>
#include <cstdint>

#include "trainscope/viewer/search_model.h"

class QLabel;
class QLineEdit;
class QListWidget;
class QTimer;

namespace trainscope::viewer {

class SearchWidget : public QWidget {
  Q_OBJECT

 public:
  // How long typing must pause before the query runs.
  static constexpr int kTypingPauseMs = 250;

  explicit SearchWidget(SearchModel* model, QWidget* parent = nullptr);

  // Focuses the field with its text selected (Ctrl+F, "/").
  void FocusField();
  // Runs the field's text now if the model has not seen it yet (typing
  // still pausing); Enter and F3 call it before jumping.
  void ApplyPendingQuery();
  // Pulls the model into the list and the summary line (when it changed).
  void Refresh();

  QLineEdit* field() const { return field_; }
  QListWidget* results() const { return results_; }
  QLabel* summary() const { return summary_; }
  QSize sizeHint() const override { return {360, 170}; }

 signals:
  // Enter / F3 (+1), Shift+Enter / Shift+F3 (-1), a double-click (+1).
  void jumpRequested(int direction);
  // Escape in the field: the window's keys (arrows, WASD) again.
  void done();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  SearchModel* model_;
  QLineEdit* field_;
  QListWidget* results_;
  QLabel* summary_;
  QTimer* typing_;
  QString applied_;  // the text the model searched for
  uint64_t shown_version_ = UINT64_MAX;
  bool refreshing_ = false;  // filling the list: its row changes are not clicks
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_SEARCH_WIDGET_H_
