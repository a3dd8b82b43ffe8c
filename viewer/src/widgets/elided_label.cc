#include "trainscope/viewer/widgets/elided_label.h"

#include <QFontMetrics>
#include <QPainter>
#include <QPalette>

namespace trainscope::viewer {

ElidedLabel::ElidedLabel(QWidget* parent) : QFrame(parent) {
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  setContentsMargins(4, 0, 4, 0);
}

ElidedLabel* ElidedLabel::Hint(const QString& text, QWidget* parent) {
  auto* hint = new ElidedLabel(parent);
  hint->SetFullText(text);
  QPalette grey = hint->palette();
  grey.setColor(QPalette::WindowText, QColor(0x66, 0x66, 0x66));
  hint->setPalette(grey);
  return hint;
}

void ElidedLabel::SetFullText(const QString& text) {
  if (text == text_) return;
  text_ = text;
  setToolTip(text);
  updateGeometry();
  update();
}

void ElidedLabel::SetElideMode(Qt::TextElideMode mode) {
  if (mode == elide_mode_) return;
  elide_mode_ = mode;
  update();
}

QString ElidedLabel::ShownText() const {
  return fontMetrics().elidedText(text_, elide_mode_, contentsRect().width());
}

QSize ElidedLabel::sizeHint() const {
  const QFontMetrics metrics = fontMetrics();
  const QMargins m = contentsMargins();
  return {metrics.horizontalAdvance(text_) + m.left() + m.right(),
          metrics.height() + m.top() + m.bottom()};
}

QSize ElidedLabel::minimumSizeHint() const {
  const QFontMetrics metrics = fontMetrics();
  const QMargins m = contentsMargins();
  // Room for a few characters and the ellipsis, never the whole text.
  return {metrics.horizontalAdvance(QString::fromUtf8("MMM\xE2\x80\xA6")) + m.left() + m.right(),
          metrics.height() + m.top() + m.bottom()};
}

void ElidedLabel::paintEvent(QPaintEvent* event) {
  QFrame::paintEvent(event);
  QPainter painter(this);
  painter.setPen(palette().color(foregroundRole()));
  painter.drawText(contentsRect(), Qt::AlignLeft | Qt::AlignVCenter, ShownText());
}

}  // namespace trainscope::viewer
