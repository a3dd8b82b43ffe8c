#include "trainscope/viewer/widgets/range_stats_panel.h"

#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "trainscope/viewer/widgets/elided_label.h"

namespace trainscope::viewer {
namespace {

constexpr int kNameIdRole = Qt::UserRole;

QTableWidget* NewTable(const std::vector<std::string>& headers, QWidget* parent) {
  auto* table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  QStringList labels;
  for (const std::string& header : headers) labels << QString::fromStdString(header);
  table->setHorizontalHeaderLabels(labels);
  table->verticalHeader()->setVisible(false);
  table->verticalHeader()->setDefaultSectionSize(20);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setWordWrap(false);
  return table;
}

const char kOperatorsTip[] =
    "Operators of the range by name: self time leaves out the operators nested inside; "
    "share: self time over the range's device time. Click a header to sort.";

// The first `text_columns` (names) left-aligned, the figures right.
void SetRow(QTableWidget* table, int row, const std::vector<std::string>& cells,
            size_t text_columns, bool bold) {
  for (size_t c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(QString::fromStdString(cells[c]));
    item->setTextAlignment(Qt::AlignVCenter | (c < text_columns ? Qt::AlignLeft : Qt::AlignRight));
    if (bold) {
      QFont font = item->font();
      font.setBold(true);
      item->setFont(font);
    }
    table->setItem(row, static_cast<int>(c), item);
  }
}

}  // namespace

RangeStatsPanel::RangeStatsPanel(RangeStatsModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->setSpacing(2);
  // Both texts elide rather than widen the window (the panel shares the
  // width of the Marey graph's column).
  auto* bar = new QHBoxLayout();
  title_ = new ElidedLabel(this);
  title_->setObjectName("range_title");
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  whole_job_ = new QPushButton("Whole job", this);
  whole_job_->setToolTip("Drop the selected range: statistics of every loaded step");
  ElidedLabel* hint = ElidedLabel::Hint(
      "shift-drag in the Marey graph or shift-click a step in the overview: a range "
      "\xC2\xB7 click an operator: highlight it \xC2\xB7 click a header: sort",
      this);
  bar->addWidget(title_, 2);
  bar->addWidget(whole_job_);
  bar->addSpacing(12);
  bar->addWidget(hint, 3);
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Horizontal, this);
  devices_ = NewTable(RangeStatsModel::DeviceHeaders(), split);
  devices_->setToolTip(
      "Per device, the analysis' step figures summed over the range's steps (with GPU work: "
      "device time); shares of the device's wall time. Total: every device's sum.");
  operators_ = NewTable(RangeStatsModel::OperatorHeaders(), split);
  operators_->horizontalHeader()->setSortIndicatorShown(true);
  operators_->horizontalHeader()->setSectionsClickable(true);
  split->addWidget(devices_);
  split->addWidget(operators_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  connect(whole_job_, &QPushButton::clicked, this, [this] {
    model_->Clear();
    emit rangeCleared();
  });
  connect(operators_->horizontalHeader(), &QHeaderView::sectionClicked, this, [this](int column) {
    const auto chosen = static_cast<TopOperators::Column>(column);
    TopOperators& top = model_->top();
    // The same column again flips the order; a new one starts with the
    // largest (names and classes: A first).
    const bool text =
        chosen == TopOperators::Column::kName || chosen == TopOperators::Column::kClass;
    const bool descending = chosen == top.sort_column() ? !top.descending() : !text;
    top.SortBy(chosen, descending);
    FillOperators();
  });
  connect(operators_, &QTableWidget::cellClicked, this, [this](int row, int) {
    const QTableWidgetItem* item = operators_->item(row, 0);
    if (item != nullptr) emit operatorClicked(item->data(kNameIdRole).toUInt());
  });
  Refresh();
}

void RangeStatsPanel::Refresh() {
  title_->SetFullText(QString::fromStdString(model_->Title()));
  whole_job_->setEnabled(model_->span().has_value());
  const std::vector<std::vector<std::string>> cells = model_->DeviceCells();
  devices_->setRowCount(static_cast<int>(cells.size()));
  for (size_t r = 0; r < cells.size(); ++r) {
    SetRow(devices_, static_cast<int>(r), cells[r], 1, /*bold=*/r + 1 == cells.size());
  }
  devices_->resizeColumnsToContents();
  FillOperators();
}

void RangeStatsPanel::FillOperators() {
  const std::vector<TopOperators::Row>& rows = model_->top().rows();
  const int shown = std::min(static_cast<int>(rows.size()), kMaxOperatorRows);
  operators_->setRowCount(shown);
  for (int r = 0; r < shown; ++r) {
    SetRow(operators_, r, RangeStatsModel::OperatorCells(rows[static_cast<size_t>(r)]), 2, false);
    operators_->item(r, 0)->setData(kNameIdRole, rows[static_cast<size_t>(r)].name_id);
    operators_->item(r, 0)->setToolTip(QString::fromStdString(rows[static_cast<size_t>(r)].name));
  }
  operators_->horizontalHeader()->setSortIndicator(
      static_cast<int>(model_->top().sort_column()),
      model_->top().descending() ? Qt::DescendingOrder : Qt::AscendingOrder);
  operators_->resizeColumnsToContents();
  // Long kernel names must not push the figures out of sight.
  operators_->setColumnWidth(0, std::min(operators_->columnWidth(0), 240));
  QString tip = kOperatorsTip;
  if (static_cast<int>(rows.size()) > shown) {
    tip += QString(" %1 operators; the first %2 shown.").arg(rows.size()).arg(shown);
  }
  operators_->setToolTip(tip);
}

}  // namespace trainscope::viewer
