#include "trainscope/cli/table_printer.h"

#include <algorithm>
#include <utility>

namespace trainscope::cli {

TablePrinter::TablePrinter(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TablePrinter::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TablePrinter::Render() const {
  std::vector<size_t> widths(columns_.size(), 0);
  for (size_t c = 0; c < columns_.size(); ++c) widths[c] = columns_[c].header.size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto render_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cells[c];
      const std::string padding(widths[c] - cell.size(), ' ');
      if (c != 0) line += "  ";
      if (columns_[c].align == kRight) {
        line += padding + cell;
      } else {
        line += cell + padding;
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::vector<std::string> headers;
  for (const Column& column : columns_) headers.push_back(column.header);
  std::string out = render_line(headers);
  for (const auto& row : rows_) out += render_line(row);
  return out;
}

}  // namespace trainscope::cli
