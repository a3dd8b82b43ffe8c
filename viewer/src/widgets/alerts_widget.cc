#include "trainscope/viewer/widgets/alerts_widget.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>

#include "trainscope/viewer/widgets/draw_list_painter.h"

namespace trainscope::viewer {
namespace {

QString Q(const std::string& s) { return QString::fromStdString(s); }

constexpr int kRowRole = Qt::UserRole;
constexpr int kDetailsRole = Qt::UserRole + 1;
const QColor kRaisedColor(190, 30, 30);
const QColor kClearedColor(128, 128, 128);

// What tells alerts apart first, so that at the default window size (a
// narrow dock) the state, rule, ranks and duration are on screen; the
// raising step is in the duration ("open since step 31", "steps 44-58").
enum Column { kState, kRule, kRanks, kDuration, kValue, kStep, kOperator, kColumns };

// Widest a column grows to its contents, in average characters, when the
// columns do not all fit: longer rule names and rank lists are elided (the
// row's tooltip and the details pane hold them in full) rather than push the
// duration off screen.
constexpr std::pair<Column, int> kMaxChars[] = {{kRule, 15}, {kRanks, 12}, {kDuration, 22}};

}  // namespace

AlertsWidget::AlertsWidget(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* filters = new QHBoxLayout();
  rule_ = new QComboBox(this);
  rank_ = new QComboBox(this);
  kind_ = new QComboBox(this);
  kind_->addItem("all kinds");
  kind_->addItem("performance");
  kind_->addItem("items");
  rule_->addItem("all rules");
  rank_->addItem("all ranks");
  for (QComboBox* box : {rule_, rank_, kind_}) {
    // Narrow when the column is: long rule names must not widen the window.
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(1);
    filters->addWidget(box, 1);  // the row's width, shared
    connect(box, &QComboBox::currentIndexChanged, this, [this] {
      if (rebuilding_) return;
      ReadFilters();
      Rebuild();
    });
  }
  layout->addLayout(filters);

  auto* split = new QSplitter(Qt::Vertical, this);
  list_ = new QTreeWidget(split);
  list_->setHeaderLabels({"State", "Rule", "Ranks", "Duration", "Value", "Step", "Operator"});
  list_->setRootIsDecorated(true);
  list_->setUniformRowHeights(true);
  list_->header()->setStretchLastSection(true);
  list_->viewport()->installEventFilter(this);
  details_ = new QPlainTextEdit(split);
  details_->setReadOnly(true);  // still selectable and copyable
  details_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  details_->setPlaceholderText("select an alert to read it in full");
  split->addWidget(list_);
  split->addWidget(details_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  connect(list_, &QTreeWidget::currentItemChanged, this,
          [this](QTreeWidgetItem* item, QTreeWidgetItem*) { ShowDetails(item); });
  connect(list_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item, int) {
    const QVariant row = item->data(0, kRowRole);
    if (row.isValid()) emit alertClicked(row.toInt());
  });
}

void AlertsWidget::ReadFilters() {
  filter_.rule = rule_->currentIndex() <= 0 ? "" : rule_->currentText().toStdString();
  filter_.rank.reset();
  if (rank_->currentIndex() > 0) filter_.rank = rank_->currentData().toUInt();
  filter_.kind.reset();
  if (kind_->currentIndex() == 1) filter_.kind = AlertsModel::Kind::kPerformance;
  if (kind_->currentIndex() == 2) filter_.kind = AlertsModel::Kind::kItem;
}

void AlertsWidget::Refresh(const AlertsModel& model) {
  model_ = &model;
  // Offer what the model has seen, keeping the current choice.
  rebuilding_ = true;
  const QString rule = rule_->currentText();
  rule_->clear();
  rule_->addItem("all rules");
  for (const std::string& r : model.Rules()) rule_->addItem(Q(r));
  rule_->setCurrentIndex(std::max(0, rule_->findText(rule)));
  const QVariant rank = rank_->currentData();
  rank_->clear();
  rank_->addItem("all ranks");
  for (uint32_t r : model.Ranks()) rank_->addItem(QString("rank %1").arg(r), r);
  rank_->setCurrentIndex(rank.isValid() ? std::max(0, rank_->findData(rank)) : 0);
  rebuilding_ = false;
  ReadFilters();
  Rebuild();
}

bool AlertsWidget::eventFilter(QObject* watched, QEvent* event) {
  if (watched == list_->viewport() && event->type() == QEvent::Resize) FitColumns();
  return QWidget::eventFilter(watched, event);
}

void AlertsWidget::FitColumns() {
  int total = 0;
  for (int c = 0; c < kColumns - 1; ++c) {
    list_->resizeColumnToContents(c);
    total += list_->columnWidth(c);
  }
  if (total <= list_->viewport()->width()) return;
  const int char_width = list_->fontMetrics().averageCharWidth();
  for (const auto& [column, chars] : kMaxChars) {
    list_->setColumnWidth(column, std::min(list_->columnWidth(column), chars * char_width));
  }
}

void AlertsWidget::Rebuild() {
  if (model_ == nullptr) return;
  rebuilding_ = true;
  // Keep each group open or shut as the user left it.
  std::optional<bool> performance_open, items_open;
  for (int i = 0; i < list_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* top = list_->topLevelItem(i);
    if (top->data(0, kRowRole).isValid()) continue;
    (top->data(0, kDetailsRole).toInt() == 1 ? items_open : performance_open) = top->isExpanded();
  }
  list_->clear();
  const std::vector<AlertsModel::Group> groups = model_->Groups(filter_);
  const std::optional<size_t> selected = model_->selected_row();
  QTreeWidgetItem* current = nullptr;
  QTreeWidgetItem* first = nullptr;
  for (const AlertsModel::Group& group : groups) {
    const bool items = group.kind == AlertsModel::Kind::kItem;
    auto* top = new QTreeWidgetItem(list_, {Q(group.title)});
    top->setFirstColumnSpanned(true);
    top->setFlags(Qt::ItemIsEnabled);
    top->setData(0, kDetailsRole, items ? 1 : 0);
    QFont bold = top->font(0);
    bold.setBold(true);
    top->setFont(0, bold);
    for (const AlertsModel::Row& row : group.rows) {
      QStringList cells(kColumns);
      cells[kState] =
          (row.cleared ? QString::fromUtf8("\xE2\x9C\x93 ") : QString::fromUtf8("\xE2\x97\x8F ")) +
          Q(row.state);
      cells[kStep] = Q(row.step);
      cells[kRule] = Q(row.rule);
      cells[kRanks] = Q(row.ranks);
      cells[kValue] = Q(row.value);
      cells[kDuration] = Q(row.duration);
      cells[kOperator] = Q(row.op);
      auto* item = new QTreeWidgetItem(top, cells);
      item->setData(0, kRowRole, static_cast<int>(row.index));
      item->setData(0, kDetailsRole, Q(row.details));
      const QColor colour = row.cleared ? kClearedColor : kRaisedColor;
      for (int c = 0; c < kColumns; ++c) {
        item->setForeground(c,
                            c == kState || c == kRule || row.cleared ? colour : QColor(Qt::black));
        item->setToolTip(c, Q(row.text));
      }
      if (!row.cleared) {
        QFont font = item->font(kState);
        font.setBold(true);
        item->setFont(kState, font);
        item->setBackground(kState, QColor(255, 225, 225));
      }
      if (row.selected_devices) {
        // Linked selection: the row names a device selected in another view.
        for (int c = kState + 1; c < kColumns; ++c)
          item->setBackground(c, DrawListPainter::ToQColor(kSelectTintColor));
        QFont font = item->font(kRanks);
        font.setBold(true);
        item->setFont(kRanks, font);
        item->setForeground(kRanks, DrawListPainter::ToQColor(kSelectColor));
      }
      if (selected.has_value() && row.index == *selected) current = item;
      if (first == nullptr) first = item;
    }
    // Item alerts come by the hundred: shut unless they are all there is.
    const std::optional<bool>& was = items ? items_open : performance_open;
    top->setExpanded(was.has_value() ? *was : (!items || groups.size() == 1));
  }
  if (groups.empty()) {
    auto* item = new QTreeWidgetItem(
        list_, {model_->size() == 0 ? "no alerts" : "no alerts match the filters"});
    item->setFirstColumnSpanned(true);
    item->setFlags(Qt::NoItemFlags);
  }
  FitColumns();
  rebuilding_ = false;
  // The details pane shows the selected alert, else the newest shown.
  QTreeWidgetItem* shown = current != nullptr ? current : first;
  if (current != nullptr) list_->setCurrentItem(current);
  ShowDetails(shown);
}

void AlertsWidget::ShowDetails(QTreeWidgetItem* item) {
  if (rebuilding_) return;
  const QString text = item != nullptr && item->data(0, kRowRole).isValid()
                           ? item->data(0, kDetailsRole).toString()
                           : QString();
  if (details_->toPlainText() != text) details_->setPlainText(text);
}

}  // namespace trainscope::viewer
