// Renders rows as an aligned plain-text table: a header row, then one line per
// row, columns separated by two spaces, numeric columns right-aligned.
//
// Usage:
//   TablePrinter table({{"JOB"}, {"EVENTS", TablePrinter::kRight}});
//   table.AddRow({"resnet", "12,345"});
//   out << table.Render();
//
// Threading: a plain value; one thread at a time.
#ifndef TRAINSCOPE_CLI_TABLE_PRINTER_H_
#define TRAINSCOPE_CLI_TABLE_PRINTER_H_

#include <string>
#include <vector>

namespace trainscope::cli {

class TablePrinter {
 public:
  enum Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = kLeft;
  };

  explicit TablePrinter(std::vector<Column> columns);

  // A row with fewer cells than columns is padded with empty cells; extra
  // cells are dropped (a programming error, but output stays aligned).
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }

  // Every line ends with '\n'; no trailing spaces.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_TABLE_PRINTER_H_
