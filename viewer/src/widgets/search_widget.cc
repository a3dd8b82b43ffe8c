#include "trainscope/viewer/widgets/search_widget.h"

#include <QEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace trainscope::viewer {

SearchWidget::SearchWidget(SearchModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  field_ = new QLineEdit(this);
  field_->setObjectName("search_field");
  field_->setPlaceholderText("Search: operator, step 120 / #120, rank 3 / r3   (Ctrl+F, /)");
  field_->setClearButtonEnabled(true);
  // A search set before the window opened (--search) shows as typed.
  field_->setText(QString::fromStdString(model_->text()));
  applied_ = field_->text();
  field_->installEventFilter(this);
  layout->addWidget(field_);
  summary_ = new QLabel(this);
  summary_->setObjectName("search_summary");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  results_ = new QListWidget(this);
  results_->setObjectName("search_results");
  results_->setUniformItemSizes(true);
  layout->addWidget(results_, 1);

  typing_ = new QTimer(this);
  typing_->setSingleShot(true);
  typing_->setInterval(kTypingPauseMs);
  connect(typing_, &QTimer::timeout, this, &SearchWidget::ApplyPendingQuery);
  connect(field_, &QLineEdit::textChanged, this, [this] { typing_->start(); });
  connect(results_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (refreshing_ || row < 0) return;
    model_->SetActive(static_cast<size_t>(row));
    Refresh();
  });
  connect(results_, &QListWidget::itemActivated, this, [this] { emit jumpRequested(1); });
  Refresh();
}

void SearchWidget::FocusField() {
  field_->setFocus(Qt::ShortcutFocusReason);
  field_->selectAll();
}

void SearchWidget::ApplyPendingQuery() {
  typing_->stop();
  if (field_->text() == applied_) return;
  applied_ = field_->text();
  model_->SetQuery(applied_.toStdString());
  Refresh();
}

void SearchWidget::Refresh() {
  if (model_->version() == shown_version_) return;
  shown_version_ = model_->version();
  summary_->setText(QString::fromStdString(model_->Summary()));
  refreshing_ = true;
  const std::vector<SearchModel::Result>& results = model_->results();
  // Rebuilt only when the results changed, not when the cursor moved.
  const int rows = static_cast<int>(results.size()) + (model_->more_results() > 0 ? 1 : 0);
  bool same = results_->count() == rows;
  for (int i = 0; same && i < static_cast<int>(results.size()); ++i) {
    same = results_->item(i)->text().toStdString() ==
           SearchModel::ResultText(results[static_cast<size_t>(i)]);
  }
  if (!same) {
    results_->clear();
    for (const SearchModel::Result& result : results) {
      auto* item = new QListWidgetItem(QString::fromStdString(SearchModel::ResultText(result)));
      item->setToolTip(item->text());
      results_->addItem(item);
    }
    if (model_->more_results() > 0) {
      auto* more = new QListWidgetItem(
          QString("\xE2\x80\xA6 %1 more names: type more of the name").arg(model_->more_results()));
      more->setFlags(Qt::NoItemFlags);
      results_->addItem(more);
    }
  }
  if (model_->active().has_value()) {
    results_->setCurrentRow(static_cast<int>(*model_->active()));
  }
  refreshing_ = false;
}

bool SearchWidget::eventFilter(QObject* watched, QEvent* event) {
  if (watched != field_ || event->type() != QEvent::KeyPress) {
    return QWidget::eventFilter(watched, event);
  }
  const auto* key = static_cast<QKeyEvent*>(event);
  switch (key->key()) {
    case Qt::Key_Return:
    case Qt::Key_Enter:
      ApplyPendingQuery();
      emit jumpRequested(key->modifiers() & Qt::ShiftModifier ? -1 : 1);
      return true;
    case Qt::Key_Escape:
      emit done();
      return true;
    case Qt::Key_Down:
    case Qt::Key_Up: {
      // Up/Down pick the result without leaving the field.
      ApplyPendingQuery();
      const int row = results_->currentRow() + (key->key() == Qt::Key_Down ? 1 : -1);
      if (row >= 0 && row < static_cast<int>(model_->results().size())) {
        results_->setCurrentRow(row);
      }
      return true;
    }
    default:
      return QWidget::eventFilter(watched, event);
  }
}

}  // namespace trainscope::viewer
