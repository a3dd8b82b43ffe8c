// A one-line label that never asks for more width than it gets: the text is
// elided ("…") to the label's width and the full text is its tooltip, so a
// status bar of several of them is never cut off mid-word by its neighbours
// (issue 23.5: status bar text cut off).
//
// Usage:
//   auto* label = new ElidedLabel(status_bar);
//   status_bar->addWidget(label, 1);
//   label->SetFullText("feed: 1,234 updates in 600 frames ...");
//
// Threading: the UI thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_ELIDED_LABEL_H_
#define TRAINSCOPE_VIEWER_WIDGETS_ELIDED_LABEL_H_

#include <QFrame>
#include <QString>

namespace trainscope::viewer {

class ElidedLabel : public QFrame {
  Q_OBJECT

 public:
  explicit ElidedLabel(QWidget* parent = nullptr);
  // A grey line of usage hints (the mouse gestures of a view) with `text`.
  static ElidedLabel* Hint(const QString& text, QWidget* parent);

  void SetFullText(const QString& text);
  // Where the ellipsis goes (default Qt::ElideRight); Qt::ElideMiddle keeps
  // both ends of a text whose end matters (the connection's update age).
  void SetElideMode(Qt::TextElideMode mode);
  const QString& full_text() const { return text_; }
  // What is drawn at the current width.
  QString ShownText() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QString text_;
  Qt::TextElideMode elide_mode_ = Qt::ElideRight;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_ELIDED_LABEL_H_
